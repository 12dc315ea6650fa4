//! Grounded metrics on a pool of two llama-servers (SmolLM2): the requests spread over
//! both, each reply held to its JSON schema, a killed run resumed. Runs alone in the
//! `ci` profile (two servers keep both cores busy).

use std::process::Stdio;
use std::time::{Duration, Instant};

use super::grounded::{check_record, per_answer, records, setup};
use crate::common::server::Server;

/// On a pool of two llama-servers: the requests spread over both, each reply held to
/// its JSON schema; a run killed after its first record resumes and judges nothing
/// twice.
#[tokio::test(flavor = "current_thread")]
async fn a_pool_of_two_servers_grounds_a_run_and_a_killed_run_resumes() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (a, b) = (
        Server::start(tmp.path(), "a"),
        Server::start(tmp.path(), "b"),
    );
    let config = format!(
        "[[endpoints]]\nurl = \"{}\"\nmax_concurrent = 1\ntimeout_s = 120\n\n[[endpoints]]\nurl = \"{}\"\nmax_concurrent = 1\ntimeout_s = 120\n",
        a.url(),
        b.url()
    );
    let env = setup(&config);
    let mut child = env
        .cmd()
        .args(["answers", "ground", "--run", "agent"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(300);
    while records(&env).await.is_empty() {
        assert!(Instant::now() < deadline, "no answer grounded in 300 s");
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = child.kill();
    let _ = child.wait();
    let out = env.ok(&["answers", "ground", "--run", "agent"]);
    let said = String::from_utf8_lossy(&out.stdout);
    let already: usize = said
        .split(" already)")
        .next()
        .and_then(|s| s.rsplit('(').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no count of answers already scored: {said}"));
    assert!(already >= 1, "the killed run's records count: {said}");
    let all = records(&env).await;
    assert_eq!(per_answer(&all).len(), 3, "every answer grounded: {all:?}");
    assert!(
        per_answer(&all).values().all(|n| *n == 1),
        "judged once each: {all:?}"
    );
    let urls = [a.url(), b.url()];
    let mut used = std::collections::BTreeSet::new();
    for r in &all {
        check_record(r);
        // Each request's server is one of the pool's, one per request, and the
        // record's `endpoint` names the distinct ones in the order first used.
        let servers: Vec<&str> = r["request_endpoints"]
            .as_array()
            .expect("request_endpoints")
            .iter()
            .map(|u| u.as_str().expect("url"))
            .collect();
        let prompts = r["prompts"].as_array().expect("prompts").len();
        assert_eq!(servers.len(), prompts, "a server per request: {r}");
        let mut distinct: Vec<&str> = Vec::new();
        for url in &servers {
            assert!(urls.iter().any(|u| u == url), "{url}");
            if !distinct.contains(url) {
                distinct.push(url);
            }
            used.insert(url.to_string());
        }
        if prompts > 0 {
            assert_eq!(r["endpoint"].as_str(), Some(distinct.join(", ").as_str()));
        }
    }
    assert_eq!(used.len(), 2, "both servers judged: {used:?}");
}
