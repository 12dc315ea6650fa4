//! Frugality of a RAG configuration against the same model without retrieval:
//!
//! ```text
//! dA = accuracy(RAG) - accuracy(LLM only)     dC = latency(RAG) - latency(LLM only)
//! A = sign(dA) (exp(|dA| / tA) - 1)           C = exp(dC / tC) - 1
//! F = tanh(A - C)  in (-1, 1)
//! ```
//! tA, tC: standard deviations of dA and dC across the compared configurations
//! (overridable). Positive F: the accuracy gain is worth its cost.

/// Frugality score for one configuration.
pub fn frugality(d_acc: f64, d_cost: f64, t_acc: f64, t_cost: f64) -> Option<f64> {
    if !(t_acc > 0.0 && t_cost > 0.0) {
        return None;
    }
    let a = d_acc.signum() * ((d_acc.abs() / t_acc).exp() - 1.0);
    let c = (d_cost / t_cost).exp() - 1.0;
    Some((a - c).tanh())
}

/// Sample standard deviation (n - 1); `None` under two values.
pub fn std_dev(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    Some((values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed() {
        // dA = 0.1, tA = 0.1 -> A = e - 1; dC = 0 -> C = 0; F = tanh(e - 1)
        let f = frugality(0.1, 0.0, 0.1, 1.0).expect("defined");
        assert!((f - (std::f64::consts::E - 1.0).tanh()).abs() < 1e-12);
        // No accuracy change and a cost increase: negative.
        assert!(frugality(0.0, 2.0, 0.1, 1.0).expect("defined") < 0.0);
        // Accuracy loss is negative even when cheaper by the same scale.
        assert!(frugality(-0.1, 0.0, 0.1, 1.0).expect("defined") < 0.0);
        assert_eq!(frugality(0.1, 0.0, 0.0, 1.0), None);
    }

    #[test]
    fn std_dev_sample() {
        assert!(
            (std_dev(&[1.0, 2.0, 3.0, 4.0]).expect("sd") - (5.0f64 / 3.0).sqrt()).abs() < 1e-12
        );
        assert_eq!(std_dev(&[1.0]), None);
    }
}
