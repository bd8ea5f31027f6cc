//! What a pod's status says of its container's last run, for everything that
//! reports a Job's outcome (the machine's observations, `ratchet timeline`).

use k8s_openapi::api::core::v1::{ContainerStateTerminated, Pod};

/// How the pod's (first) container ended, once it has.
pub fn terminated(pod: &Pod) -> Option<&ContainerStateTerminated> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .first()?
        .state
        .as_ref()?
        .terminated
        .as_ref()
}
