//! The real TUI in tmux: sessions on a private socket, each running the binary with
//! the test's config, data and models folders; keys typed, screens captured.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::Env;

/// A private tmux server whose sessions run raglab's TUI on one workspace.
pub struct Tmux {
    socket: PathBuf,
    /// The environment each TUI starts with (`RAGLAB_MODELS_DIR` may be replaced).
    pub env: Vec<(String, String)>,
    workspace: PathBuf,
}

impl Tmux {
    pub fn new(env: &Env) -> Self {
        let d = env.dir.path();
        Self {
            socket: d.join("tmux.sock"),
            env: vec![
                (
                    "RAGLAB_CONFIG_DIR".into(),
                    d.join("config").display().to_string(),
                ),
                (
                    "RAGLAB_DATA_DIR".into(),
                    d.join("data").display().to_string(),
                ),
                (
                    "RAGLAB_MODELS_DIR".into(),
                    super::models_dir().display().to_string(),
                ),
                ("RAGLAB_LOG".into(), "info,lance=warn,tantivy=warn".into()),
            ],
            workspace: env.workspace(),
        }
    }

    pub fn tmux(&self) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-S").arg(&self.socket);
        c
    }

    /// Start raglab's TUI in session `name` with `args`; stderr goes to `name.err`.
    pub fn start(&self, name: &str, args: &[&str], dir: &Path) {
        self.start_as(name, None, args, dir);
    }

    /// [`start`](Self::start) with its own config folder (so its own signing key)
    /// when `config` is given.
    pub fn start_as(&self, name: &str, config: Option<&Path>, args: &[&str], dir: &Path) {
        let mut cmd = String::from("env -u RAGLAB_WORKSPACE");
        for (k, v) in &self.env {
            let v = match config {
                Some(c) if k == "RAGLAB_CONFIG_DIR" => c.display().to_string(),
                _ => v.clone(),
            };
            cmd.push_str(&format!(" {k}='{v}'"));
        }
        cmd.push_str(&format!(
            " '{}' --workspace '{}'",
            super::raglab_bin().display(),
            self.workspace.display()
        ));
        for a in args {
            cmd.push_str(&format!(" '{a}'"));
        }
        cmd.push_str(&format!(
            " 2>'{}'",
            dir.join(format!("{name}.err")).display()
        ));
        let st = self
            .tmux()
            .args([
                "new-session",
                "-d",
                "-s",
                name,
                "-x",
                "200",
                "-y",
                "50",
                &cmd,
            ])
            .status()
            .expect("tmux");
        assert!(st.success(), "tmux new-session {name}");
        self.wait(name, Duration::from_secs(30), |s| s.contains("Corpus"));
    }

    pub fn screen(&self, name: &str) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-t", name])
            .output()
            .expect("capture");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Type `text` literally.
    pub fn type_text(&self, name: &str, text: &str) {
        let st = self
            .tmux()
            .args(["send-keys", "-t", name, "-l", text])
            .status()
            .expect("send-keys");
        assert!(st.success());
    }

    /// Press named keys (`Enter`, `Escape`).
    pub fn press(&self, name: &str, key: &str) {
        let st = self
            .tmux()
            .args(["send-keys", "-t", name, key])
            .status()
            .expect("send-keys");
        assert!(st.success());
    }

    /// Wait until the screen satisfies `ok`; panic with the screen after `limit`.
    pub fn wait(&self, name: &str, limit: Duration, ok: impl Fn(&str) -> bool) -> String {
        let t = Instant::now();
        loop {
            let s = self.screen(name);
            if ok(&s) {
                return s;
            }
            assert!(t.elapsed() < limit, "timed out in {name}; screen:\n{s}");
            std::thread::sleep(Duration::from_millis(40));
        }
    }

    /// Wait until the screen satisfies `ok` and two captures in a row are equal, so a
    /// check of the whole screen reads one finished frame, not a frame half drawn
    /// over the previous pane's leftovers.
    pub fn settled(&self, name: &str, limit: Duration, ok: impl Fn(&str) -> bool) -> String {
        let t = Instant::now();
        let mut last = self.wait(name, limit, &ok);
        loop {
            std::thread::sleep(Duration::from_millis(60));
            let s = self.screen(name);
            if s == last && ok(&s) {
                return s;
            }
            assert!(t.elapsed() < limit, "{name} never settled; screen:\n{s}");
            last = s;
        }
    }

    /// Quit with `q` and wait for the process to end.
    pub fn quit(&self, name: &str) {
        self.type_text(name, "q");
        let t = Instant::now();
        while self
            .tmux()
            .args(["has-session", "-t", name])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
        {
            assert!(t.elapsed() < Duration::from_secs(30), "{name} did not quit");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").status();
    }
}
