//! Where a model runs: CPU or a GPU, and how many of its layers are offloaded.
//!
//! llama.cpp says this in its load log ("offloaded 31/31 layers to GPU"), but that line
//! is an info line, which raglab keeps off the screen (it would draw over the TUI) and
//! out of the log file unless `RAGLAB_LOG=info` asks, so the same figure is derived from
//! what the backend reports instead: whether this build can offload at all
//! (`llama_supports_gpu_offload`: a CUDA build with a usable device), the first GPU
//! device ggml lists (its description is the GPU's name), and llama.cpp's own rule for
//! `n_gpu_layers`: the model's `n_layer` repeating layers plus the output layer, the
//! last `min(n_gpu_layers, n_layer + 1)` of them placed on the GPU.

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::{LlamaBackendDeviceType, list_llama_ggml_backend_devices};
use serde::{Deserialize, Serialize};

use super::Result;
use super::backend::backend;

/// Layers to offload when neither a flag nor the config says: every layer in a CUDA
/// build (llama.cpp caps the request at the model's layer count), none in a CPU build.
/// The one place this default is decided; `service::Context` resolves flag, then
/// config, then this.
pub const fn default_gpu_layers() -> u32 {
    if cfg!(feature = "cuda") { 999 } else { 0 }
}

/// Where one loaded model runs.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Placement {
    /// `CPU`, or the GPU's name (e.g. `NVIDIA H200`) when any layer is offloaded.
    pub device: String,
    /// Layers on the GPU.
    pub layers_offloaded: u32,
    /// Layers llama.cpp counts for offloading (repeating layers + output layer).
    pub layers_total: u32,
}

impl Placement {
    /// `CPU · layers offloaded 0/31` or `NVIDIA H200 · layers offloaded 31/31`.
    pub fn describe(&self) -> String {
        format!(
            "{} · layers offloaded {}/{}",
            self.device, self.layers_offloaded, self.layers_total
        )
    }
}

/// The first GPU (or integrated GPU) ggml can use, by its description; None in a CPU
/// build or on a machine without one.
pub fn gpu_name() -> Result<Option<String>> {
    if !backend()?.supports_gpu_offload() {
        return Ok(None);
    }
    Ok(list_llama_ggml_backend_devices()
        .into_iter()
        .find(|d| {
            matches!(
                d.device_type,
                LlamaBackendDeviceType::Gpu | LlamaBackendDeviceType::IntegratedGpu
            )
        })
        .map(|d| {
            if d.description.is_empty() {
                d.name
            } else {
                d.description
            }
        }))
}

/// Where `model`, loaded with `requested` GPU layers, runs.
pub fn placement(model: &LlamaModel, requested: u32) -> Result<Placement> {
    Ok(place(gpu_name()?, model.n_layer(), requested))
}

/// llama.cpp's offload rule (see the module comment), apart from the model.
fn place(gpu: Option<String>, n_layer: u32, requested: u32) -> Placement {
    let total = n_layer + 1;
    match gpu {
        Some(name) if requested > 0 => Placement {
            device: name,
            layers_offloaded: requested.min(total),
            layers_total: total,
        },
        _ => Placement {
            device: "CPU".into(),
            layers_offloaded: 0,
            layers_total: total,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offload_is_capped_at_the_layer_count_and_needs_a_gpu() {
        let h200 = || Some("NVIDIA H200".to_string());
        assert_eq!(
            place(h200(), 30, 999).describe(),
            "NVIDIA H200 · layers offloaded 31/31"
        );
        assert_eq!(place(h200(), 30, 10).layers_offloaded, 10);
        assert_eq!(
            place(h200(), 30, 0).describe(),
            "CPU · layers offloaded 0/31"
        );
        assert_eq!(
            place(None, 30, 999).describe(),
            "CPU · layers offloaded 0/31"
        );
    }
}
