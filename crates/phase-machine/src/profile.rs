//! What a service plugs into the machine: its Jobs' commands and its workloads.

/// A Job the machine may run, named `<resource>-<suffix>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobTemplate {
    pub suffix: &'static str,
    pub command: Vec<String>,
}

/// A service's profile. The machine is the same for every service; the profile
/// says which commands it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    /// Lower-case service name, used in messages (`cinder`).
    pub service: &'static str,
    /// The steady-state schema sync (fresh install and patch bumps).
    pub db_sync: JobTemplate,
}
