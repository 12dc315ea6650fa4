//! Secrets stay where they are: the Ray driver passes each shard task only the
//! variables it needs (Ray ships a task's environment to every node).

use crate::common;

use std::process::Command;

#[test]
fn ray_tasks_get_only_the_variables_they_need() {
    let script = common::repo().join("scripts/ray_eval.py");
    let probe = format!(
        "import importlib.util, json\n\
         spec = importlib.util.spec_from_file_location('ray_eval', {script:?})\n\
         m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n\
         env = {{'PATH': '/bin', 'HOME': '/h', 'AWS_ACCESS_KEY_ID': 'k', 'RAGLAB_WORKSPACE': 'w',\n\
                'OPENAI_API_KEY': 'secret', 'GITHUB_TOKEN': 'secret', 'SSH_AUTH_SOCK': '/s',\n\
                'MY_ENDPOINT_KEY': 'mine'}}\n\
         print(json.dumps(sorted(m.task_environment(env, ['MY_ENDPOINT_KEY']))))\n",
        script = script.to_str().expect("utf8")
    );
    let out = Command::new("python3")
        .args(["-c", &probe])
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names: Vec<String> = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        names,
        [
            "AWS_ACCESS_KEY_ID",
            "HOME",
            "MY_ENDPOINT_KEY",
            "PATH",
            "RAGLAB_WORKSPACE"
        ]
    );
}
