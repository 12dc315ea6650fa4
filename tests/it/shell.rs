//! The commands that run before any workspace is opened. `raglab completions` and
//! `raglab man` are made from the parser's own definition, so every command
//! `raglab --help` lists must appear in them, and they must run on a machine where
//! raglab has no config, data or workspace yet (and create none). `raglab config init`
//! writes a config raglab reads, and never loses the one it replaces.

use crate::common::Env;

/// The subcommand names `raglab --help` lists (its "Commands:" block), `help` aside.
fn listed_commands(env: &Env) -> Vec<String> {
    let help = String::from_utf8(env.ok(&["--help"]).stdout).expect("utf-8 help");
    let block = help
        .split("Commands:\n")
        .nth(1)
        .expect("a Commands: block in --help");
    let names: Vec<String> = block
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(str::to_string)
        .collect();
    assert!(
        names.len() > 10,
        "too few commands parsed from --help: {names:?}"
    );
    names
}

fn untouched(env: &Env) {
    for leftover in ["config", "data", "ws"] {
        assert!(
            !env.dir.path().join(leftover).exists(),
            "a standalone command created {leftover}/"
        );
    }
}

#[test]
fn completion_scripts_name_every_command_and_bash_parses_its_own() {
    let env = Env::new();
    let commands = listed_commands(&env);
    // --help itself builds no context; clear what it may have made anyway.
    let _ = std::fs::remove_dir_all(env.dir.path().join("data"));
    for shell in ["bash", "zsh", "fish"] {
        let out = env.ok(&["completions", shell]);
        let script = String::from_utf8(out.stdout).expect("utf-8 script");
        for c in &commands {
            assert!(
                script.contains(c.as_str()),
                "{shell} completions lack `{c}`"
            );
        }
        if shell == "bash" {
            let path = env.dir.path().join("raglab.bash");
            std::fs::write(&path, &script).expect("write script");
            let check = std::process::Command::new("bash")
                .arg("-n")
                .arg(&path)
                .output()
                .expect("run bash -n");
            assert!(
                check.status.success(),
                "bash -n rejects the script: {}",
                String::from_utf8_lossy(&check.stderr)
            );
        }
    }
    let bad = env
        .cmd()
        .args(["completions", "tcsh"])
        .output()
        .expect("spawn");
    assert!(!bad.status.success(), "an unknown shell must be refused");
    untouched(&env);
}

#[test]
fn manual_pages_one_per_command_on_a_machine_with_nothing_set_up() {
    let env = Env::new();
    let commands = listed_commands(&env);
    let _ = std::fs::remove_dir_all(env.dir.path().join("data"));
    let page = String::from_utf8(env.ok(&["man"]).stdout).expect("utf-8 page");
    assert!(page.contains(".TH raglab 1"), "raglab.1 has no title line");
    let pages = tempfile::tempdir().expect("temp dir");
    let out = pages.path().join("man1");
    env.ok(&["man", "--out", out.to_str().expect("utf-8 path")]);
    for c in &commands {
        let file = out.join(format!("raglab-{c}.1"));
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("no page {}: {e}", file.display()));
        assert!(
            text.contains(&format!(".TH raglab-{c} 1")),
            "{} has no title line",
            file.display()
        );
    }
    let eval_retrieval = std::fs::read_to_string(out.join("raglab-eval-retrieval.1"))
        .expect("a page for a nested command");
    assert!(
        eval_retrieval.contains("qrels"),
        "eval retrieval's page lacks --qrels"
    );
    untouched(&env);
}

/// `raglab config init` writes the commented config where raglab reads it; raglab then
/// runs on it unchanged; a second init refuses to replace it, `--force` replaces it
/// keeping the old file, and a broken config is mended by `--force` (init never reads
/// the file it replaces).
#[test]
fn config_init_writes_a_config_raglab_reads_and_never_loses_the_old_one() {
    let env = Env::new();
    let file = env.dir.path().join("config").join("config.toml");
    let printed =
        String::from_utf8(env.ok(&["config", "init", "--print"]).stdout).expect("utf-8 config");
    assert!(!file.exists(), "--print wrote the file");
    env.ok(&["config", "init"]);
    let written = std::fs::read_to_string(&file).expect("config written");
    assert_eq!(written, printed, "--print shows what init writes");
    let data_dir = env.dir.path().join("data");
    assert!(
        written.contains(&format!(
            "# workspace = \"{}\"",
            data_dir.join("workspaces").join("default").display()
        )),
        "the default workspace of this machine is spelled out"
    );
    assert!(written.contains("# k = 15\n") && written.contains("# alpha = 0.7\n"));
    // raglab runs on the file it wrote (an unknown key would be an error).
    let paths = String::from_utf8(env.ok(&["paths"]).stdout).expect("utf-8");
    assert!(paths.contains(&file.display().to_string()), "{paths}");

    let again = env
        .cmd()
        .args(["config", "init"])
        .output()
        .expect("spawn raglab");
    assert!(!again.status.success(), "a second init replaced the file");
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"));

    std::fs::write(&file, "[retrieval]\nk = \"many\"\n").expect("break the config");
    let broken = env.cmd().arg("paths").output().expect("spawn raglab");
    assert!(!broken.status.success(), "a broken config was accepted");
    env.ok(&["config", "init", "--force"]);
    assert_eq!(
        std::fs::read_to_string(file.with_extension("toml.bak")).expect("backup kept"),
        "[retrieval]\nk = \"many\"\n"
    );
    assert_eq!(std::fs::read_to_string(&file).expect("config"), written);
    env.ok(&["paths"]);
}
