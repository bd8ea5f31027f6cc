use std::path::PathBuf;

/// Why the local control plane could not be brought up or used.
///
/// Every variant that concerns a process names the component and, where there is
/// one, its log file, so a failure reads as "kube-apiserver exited, see <log>"
/// rather than a hang or a bare I/O error.
#[derive(Debug, thiserror::Error)]
pub enum TestEnvError {
    #[error("the Go toolchain is missing: {0}")]
    GoMissing(String),

    #[error("the build script {script} failed: {detail}")]
    BuildFailed { script: PathBuf, detail: String },

    #[error("{component} binary not found at {path}")]
    BinaryMissing {
        component: &'static str,
        path: PathBuf,
    },

    #[error("could not start {component}: {source}")]
    Spawn {
        component: &'static str,
        #[source]
        source: std::io::Error,
    },

    #[error("{component} exited during start-up ({status}); its log is {log}:\n{tail}")]
    ExitedEarly {
        component: &'static str,
        status: String,
        log: PathBuf,
        tail: String,
    },

    #[error("{component} could not listen on its port (address already in use); its log is {log}")]
    PortInUse {
        component: &'static str,
        log: PathBuf,
    },

    #[error("{component} was not ready within {seconds}s; its log is {log}:\n{tail}")]
    NotReady {
        component: &'static str,
        seconds: u64,
        log: PathBuf,
        tail: String,
    },

    #[error("certificate generation failed: {0}")]
    Certificates(#[from] rcgen::Error),

    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("Kubernetes client error: {0}")]
    Kube(#[from] kube::Error),

    #[error("kubeconfig error: {0}")]
    Kubeconfig(String),

    #[error("the shared test cluster is unavailable: {0}")]
    Shared(String),

    #[error("etcd request failed: {0}")]
    Etcd(String),

    #[error("pod network: {0}")]
    Network(String),

    #[error("image catalogue: {0}")]
    Image(String),

    #[error("{0}")]
    NotRoot(String),

    #[error("service {service}: {detail}")]
    Service { service: String, detail: String },
}

pub type Result<T, E = TestEnvError> = std::result::Result<T, E>;

/// Adds the path to an I/O error, which std leaves out.
pub(crate) trait IoContext<T> {
    fn at(self, path: impl Into<PathBuf>) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, path: impl Into<PathBuf>) -> Result<T> {
        self.map_err(|source| TestEnvError::Io {
            path: path.into(),
            source,
        })
    }
}
