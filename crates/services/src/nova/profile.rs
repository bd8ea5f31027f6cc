//! Nova's profile on seed 000's four phases. Nova has no expand/contract
//! split of its schema: `nova-manage api_db sync` and `db sync` apply the
//! target release's migrations, which only add (a column is dropped by an
//! ordinary migration two releases after the code stopped reading it), so
//! they are the expand, run on the target image while the installed release
//! serves; the API database first, then each cell's (cell0 and every cell of
//! the spec: the cells are the resource's Job groups, each Job named after
//! its cell). Migrating names (and, by the spec's choice, forces down) each
//! cell's stale service rows, then runs `nova-status upgrade check`. The roll goes
//! super-conductor, cell conductors, scheduler, API, computes, each pinned
//! by `[upgrade_levels] compute = auto` to the oldest compute; the pin is
//! released by the second roll once the release is promoted. Contracting is
//! `nova-manage db online_data_migrations`, per cell, looped until nothing
//! is left.

use ratchet_phase_machine::{Advice, ExitReason, JobTemplate, Phase, Profile};

pub const SERVICE: &str = "nova";
/// Where the rendered configuration is mounted; commands read it with
/// `--config-dir`, the API through `OS_NOVA_CONFIG_DIR`.
pub const CONFIG_DIR: &str = "/etc/nova/nova.conf.d";

fn manage(args: &str) -> String {
    format!("nova-manage --config-dir {CONFIG_DIR} {args}")
}

fn job(suffix: &'static str, script: String) -> JobTemplate {
    JobTemplate {
        suffix,
        command: vec!["/bin/sh".into(), "-c".into(), script],
        ..JobTemplate::default()
    }
}

/// The same Job once per cell (cell0 included), with that cell's database
/// and bus.
fn per_cell(template: JobTemplate) -> JobTemplate {
    JobTemplate {
        per_group: true,
        ..template
    }
}

/// The API database's schema.
fn api_db_sync(suffix: &'static str) -> JobTemplate {
    job(suffix, manage("api_db sync"))
}

/// A cell's schema, its own database only (`--local_cell`: plain `db sync`
/// would also sync cell0 through the API database's mapping).
fn cell_db_sync(suffix: &'static str) -> JobTemplate {
    per_cell(job(suffix, manage("db sync --local_cell")))
}

/// The cell's mapping in the API database, made true idempotently: cell0 by
/// `map_cell0` with its URL given (the URL it would derive decodes the
/// password), another cell created when no cell of its name exists
/// (`create_cell` exits 2 both for "this cell" and for a clash, and names
/// are not unique), else updated to the spec's URLs (given explicitly:
/// `update_cell` writes the configuration's for what it is not given).
fn cell_mapping() -> JobTemplate {
    let script = format!(
        "g=\"$RATCHET_JOB_GROUP\"; db=\"$OS_DATABASE__CONNECTION\"; mq=\"$OS_DEFAULT__TRANSPORT_URL\"; \
         if [ \"$g\" = cell0 ]; then exec {map0} --database_connection \"$db\"; fi; \
         cells=$({list}) || exit 1; \
         uuid=$(printf '%s\\n' \"$cells\" | awk -F'|' -v n=\"$g\" \
         '{{ name = $2; id = $3; gsub(/ /, \"\", name); gsub(/ /, \"\", id) }} name == n {{ print id; exit }}'); \
         if [ -z \"$uuid\" ]; then exec {create} --name \"$g\" --database_connection \"$db\" --transport-url \"$mq\"; fi; \
         exec {update} --cell_uuid \"$uuid\" --name \"$g\" --database_connection \"$db\" --transport-url \"$mq\"",
        map0 = manage("cell_v2 map_cell0"),
        list = manage("cell_v2 list_cells --verbose"),
        create = manage("cell_v2 create_cell"),
        update = manage("cell_v2 update_cell"),
    );
    per_cell(job("cell-mapping", script))
}

/// `nova-status upgrade check` tolerates 0 and 1 (warning: e.g. instances
/// without `hw_machine_type`); a failure (2: Placement unreachable, a cell
/// mapping missing, computes older than the supported window, no service
/// tokens) stops the upgrade.
pub const CHECK_TOLERATES: &[i32] = &[0, 1];

/// The termination message of an online data migrations Job: its passes and
/// the rows each migration moved.
const MIGRATIONS_SUMMARY: &str = "/dev/termination-log";
/// A writable directory in every Nova pod and Job.
pub const STATE_DIR: &str = "/var/lib/nova";

/// `nova-manage db online_data_migrations`, in batches (`--max-count`):
/// each pass prints a table of the rows each migration found and moved and
/// exits 1 while rows were moved, 0 once nothing is left, 2 when a migration
/// raised. The loop runs until 0 and leaves the passes and rows moved per
/// migration as the pod's termination message.
fn online_data_migrations() -> JobTemplate {
    let script = format!(
        "moved={STATE_DIR}/migrated; : > \"$moved\"; passes=0; \
         while :; do out=$({run} --max-count 1000 2>&1); rc=$?; printf '%s\\n' \"$out\"; \
         passes=$((passes + 1)); \
         printf '%s\\n' \"$out\" | awk -F'|' 'NF > 3 && $4 ~ /[0-9]/ {{ \
         name = $2; gsub(/ /, \"\", name); done = $4; gsub(/ /, \"\", done); \
         if (done > 0) print name, done }}' >> \"$moved\"; \
         [ $rc -eq 1 ] || break; done; \
         total=$(awk '{{ s[$1] += $2 }} END {{ for (m in s) printf \"%s %d, \", m, s[m] }}' \"$moved\"); \
         printf 'online_data_migrations exit %d; passes: %d; moved: %s\\n' \"$rc\" \"$passes\" \
         \"${{total:-nothing}}\" > {MIGRATIONS_SUMMARY}; exit $rc",
        run = manage("db online_data_migrations"),
    );
    JobTemplate {
        fail_fast_exit_codes: vec![2, 127],
        exit_reasons: vec![ExitReason {
            exit_code: 2,
            reason: "OnlineMigrationsFailed",
            explanation: "nova-manage db online_data_migrations exited 2: a migration raised (its log names it)",
        }],
        reports: true,
        ..per_cell(job("online-migrations", script))
    }
}

/// The script the stale-services Job runs, beside the configuration.
pub const STALE_SERVICES_SCRIPT: (&str, &str) = (
    "ratchet-nova-stale-services.py",
    include_str!("stale_services.py"),
);

/// `ServiceRowsCurrent`: whether the last look found service rows of hosts
/// the resource does not run (the script's words when it found none).
pub const STALE_SERVICES: Advice = Advice {
    condition: "ServiceRowsCurrent",
    all_clear: "no stale services",
    clear_reason: "NoStaleServices",
    found_reason: "StaleServicesFound",
};

/// Each cell's service rows of hosts the resource's pods are not, named and
/// (by the spec's choice) forced down, before the check (a stale compute
/// older than the supported window would fail it) and the roll (whose pins
/// it would hold). Its summary is quoted in `MigrateComplete` and kept in
/// the advisory condition [`STALE_SERVICES`].
fn stale_services() -> JobTemplate {
    JobTemplate {
        reports: true,
        advice: Some(STALE_SERVICES),
        ..per_cell(job(
            "stale-services",
            format!("python3 {CONFIG_DIR}/{}", STALE_SERVICES_SCRIPT.0),
        ))
    }
}

pub fn profile() -> Profile {
    let mut rolling = Phase::rolling_update();
    rolling.abort_caution = Some(
        "a workload whose every pod already runs the target release cannot go back: Nova refuses to start a service older than every record of its binary (ServiceTooOld)",
    );
    let mut contracting = Phase::contracting(
        online_data_migrations(),
        "online data migrations rewrite rows for the target release",
    );
    // Every service record is at the target's version by now: the installed
    // release's processes would refuse to start.
    contracting.abortable = false;
    Profile {
        service: SERVICE,
        db_sync: vec![
            api_db_sync("api-db-sync"),
            cell_mapping(),
            cell_db_sync("db-sync"),
        ],
        phases: vec![
            Phase::expanding(api_db_sync("api-db-expand")).then(cell_db_sync("db-expand")),
            Phase::migrating(stale_services()).then(JobTemplate {
                exit_reasons: vec![ExitReason {
                    exit_code: 2,
                    reason: "UpgradeCheckFailed",
                    explanation: "nova-status reported a failed check (named in the message)",
                }],
                ..JobTemplate::upgrade_check(
                    "upgrade-check",
                    "nova-status",
                    CONFIG_DIR,
                    CHECK_TOLERATES,
                )
            }),
            rolling,
            contracting,
        ],
        minimum_replicas: Some(2),
    }
}
