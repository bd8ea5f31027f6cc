//! Runs a checked phase Job's script ([`JobTemplate::checked_step`]) as its
//! pod would, with a stand-in for the service's manage tool: what each
//! profile's table of schema-check codes is proven against.

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use ratchet_phase_machine::JobTemplate;

/// The Job's exit code when `tool` (on the PATH) exits `check` for arguments
/// ending in `check_args` (the schema check) and `step` for anything else (the
/// phase's own step).
pub fn job_exit(
    template: &JobTemplate,
    tool: &str,
    check_args: &str,
    step: i32,
    check: i32,
) -> i32 {
    static RUNS: AtomicU32 = AtomicU32::new(0);
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("ratchet-{tool}-{}-{run}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let fake = dir.join(tool);
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\ncase \"$*\" in *'{check_args}') exit {check} ;; *) exit {step} ;; esac\n"
        ),
    )
    .expect("stand-in tool");
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("executable");
    let code = Command::new("/bin/sh")
        .args(["-c", &template.command[2]])
        .env("PATH", format!("{}:/usr/bin:/bin", dir.display()))
        .status()
        .expect("sh runs")
        .code()
        .unwrap_or(-1);
    let _ = std::fs::remove_dir_all(&dir);
    code
}
