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

/// Every command of the parser, by its path of names (`["study", "roster", "add"]`),
/// hidden ones and clap's own `help` aside.
fn commands_of(
    cmd: &clap::Command,
    path: Vec<String>,
    out: &mut Vec<(Vec<String>, clap::Command)>,
) {
    for sub in cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        let mut p = path.clone();
        p.push(sub.get_name().to_string());
        commands_of(sub, p.clone(), out);
        out.push((p, sub.clone()));
    }
}

fn every_command() -> Vec<(Vec<String>, clap::Command)> {
    use clap::CommandFactory as _;
    let mut root = raglab::cli::Cli::command();
    root.build();
    let mut out = vec![(Vec::new(), root.clone())];
    commands_of(&root, Vec::new(), &mut out);
    out
}

/// `--help` is complete: every flag and argument of every command says what it is,
/// and a default is stated once (not "(default: one per core) [default: 0]").
#[test]
fn every_flag_and_argument_says_what_it_is() {
    let mut silent = Vec::new();
    let mut twice = Vec::new();
    for (path, cmd) in every_command() {
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            if id == "help" || id == "version" || arg.is_hide_set() {
                continue;
            }
            let help = arg
                .get_long_help()
                .or(arg.get_help())
                .map(ToString::to_string)
                .unwrap_or_default();
            let name = format!("raglab {} {id}", path.join(" "));
            if help.trim().is_empty() {
                silent.push(name.clone());
            }
            // A switch (`--json`) has a default of false that help never shows.
            let shows_default = arg.get_action().takes_values()
                && !arg.get_default_values().is_empty()
                && !arg.is_hide_default_value_set();
            if shows_default && help.contains("(default:") {
                twice.push(name);
            }
        }
    }
    assert!(
        silent.is_empty(),
        "flags without a description: {silent:#?}"
    );
    assert!(twice.is_empty(), "defaults stated twice: {twice:#?}");
}

/// The options every command takes are listed under their own heading, after the
/// command's own flags, so a reader sees what the command adds.
#[test]
fn global_options_have_their_own_heading() {
    let env = Env::new();
    let help = String::from_utf8(env.ok(&["search", "--help"]).stdout).expect("utf-8");
    let (own, global) = help
        .split_once("Global options:")
        .unwrap_or_else(|| panic!("no Global options heading:\n{help}"));
    for flag in ["--method", "--alpha", "--rerank", "--json"] {
        assert!(own.contains(flag), "{flag} is not among search's own flags");
    }
    for flag in [
        "--workspace",
        "--theme",
        "--reviewer",
        "--role",
        "--gpu-layers",
    ] {
        assert!(global.contains(flag), "{flag} is not under Global options");
        assert!(
            !own.contains(flag),
            "{flag} is listed among search's own flags"
        );
    }
}

/// The reference's synopsis lists every command the parser has, and no command it
/// lacks: each command's path of names appears on a synopsis line that starts with
/// `raglab FIRST_NAME`.
#[test]
fn the_reference_synopsis_lists_every_command() {
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/reference/README.md"),
    )
    .expect("docs/reference/README.md");
    let block = page
        .split("## Synopsis")
        .nth(1)
        .and_then(|s| s.split("```sh\n").nth(1))
        .and_then(|s| s.split("```").next())
        .expect("a sh block under ## Synopsis");
    let lines: Vec<Vec<&str>> = block
        .lines()
        .filter(|l| l.starts_with("raglab "))
        .map(|l| {
            l.split(|c: char| c.is_whitespace() || c == '|' || c == '(' || c == ')')
                .filter(|w| !w.is_empty())
                .collect()
        })
        .collect();
    let commands = every_command();
    let mut missing = Vec::new();
    for (path, cmd) in &commands {
        // A command with subcommands is listed through them.
        if path.is_empty() || cmd.has_subcommands() {
            continue;
        }
        let listed = lines.iter().any(|words| {
            words[1] == path[0] && path[1..].iter().all(|p| words.contains(&p.as_str()))
        });
        if !listed {
            missing.push(path.join(" "));
        }
    }
    assert!(missing.is_empty(), "the synopsis lacks: {missing:?}");
    for words in &lines {
        let name = words.get(1).copied().unwrap_or_default();
        if name.starts_with('[') {
            continue; // `raglab [--theme ...]`: the TUI
        }
        assert!(
            commands.iter().any(|(p, _)| p.len() == 1 && p[0] == name),
            "the synopsis lists `raglab {name}`, which the parser does not have"
        );
    }
}

/// `raglab paths` names the signing key beside the config, data, models, workspace
/// and log, says which do not exist yet, and creates none of them.
#[test]
fn paths_names_the_signing_key_and_creates_nothing() {
    let env = Env::new();
    let out = String::from_utf8(env.ok(&["paths"]).stdout).expect("utf-8");
    let key = env.dir.path().join("config").join("study-signing.key");
    let line = out
        .lines()
        .find(|l| l.starts_with("signing key:"))
        .unwrap_or_else(|| panic!("no signing key line:\n{out}"));
    assert!(line.contains(&key.display().to_string()), "{line}");
    assert!(line.contains("not there yet"), "{line}");
    let ws = out
        .lines()
        .find(|l| l.starts_with("workspace:"))
        .unwrap_or_else(|| panic!("no workspace line:\n{out}"));
    assert!(
        ws.contains(&env.workspace().display().to_string()) && ws.contains("raglab ingest"),
        "{ws}"
    );
    untouched(&env);
    // Once the key exists, the line says where it is and nothing more.
    env.ok(&["study", "key"]);
    let out = String::from_utf8(env.ok(&["paths"]).stdout).expect("utf-8");
    let line = out
        .lines()
        .find(|l| l.starts_with("signing key:"))
        .expect("key line");
    assert!(key.exists() && !line.contains("not there yet"), "{line}");
}
