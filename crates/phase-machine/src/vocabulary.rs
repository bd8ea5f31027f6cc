//! The words every service reports in: condition types, reasons, event reasons.
//! One table for all services (docs/conditions.md); a service adds a word only
//! where it truly differs (its phase names and in-progress/failure reasons come
//! from its profile).

/// Condition types.
pub mod condition {
    pub const DATABASE_READY: &str = "DatabaseReady";
    pub const DEPLOYMENTS_READY: &str = "DeploymentsReady";
    pub const READY: &str = "Ready";
    /// Advisory, for profiles with a replica minimum; does not affect Ready.
    pub const HIGHLY_AVAILABLE: &str = "HighlyAvailable";
    /// For resources with `spec.identity`: their registration in Keystone.
    pub const KEYSTONE_REGISTERED: &str = "KeystoneRegistered";
}

/// Reasons of condition changes; failure reasons double as Warning event reasons.
pub mod reason {
    // DatabaseReady, steady state.
    pub const DATABASE_SYNCED: &str = "DatabaseSynced";
    pub const DB_SYNC_IN_PROGRESS: &str = "DBSyncInProgress";
    pub const DB_SYNC_FAILED: &str = "DBSyncFailed";
    pub const IMAGE_RELEASE_MISMATCH: &str = "ImageReleaseMismatch";
    pub const INVALID_IMAGE: &str = "InvalidImage";
    pub const INVALID_CONFIG: &str = "InvalidConfig";
    pub const SECRET_MISSING: &str = "SecretMissing";
    /// Children of this name owned by another resource (a deleted
    /// predecessor's) or orphaned Jobs still running: the pass waits.
    pub const CHILDREN_NOT_OWNED: &str = "ChildrenNotOwned";
    // Validation of a release change.
    pub const VERSION_PARSE_ERROR: &str = "VersionParseError";
    pub const DOWNGRADE_NOT_SUPPORTED: &str = "DowngradeNotSupported";
    pub const UPGRADE_PATH_INVALID: &str = "UpgradePathInvalid";
    pub const UPGRADE_TARGET_CHANGED: &str = "UpgradeTargetChanged";
    /// A revert to the installed release after the point of no return.
    pub const ABORT_NOT_SAFE: &str = "AbortNotSafe";
    /// A phase's Job needs workloads stopped and the spec allows no outage.
    pub const OUTAGE_NOT_ALLOWED: &str = "OutageNotAllowed";
    /// An offline step stops workloads (the outage the spec allows begins);
    /// its Warning event marks the outage's start.
    pub const OUTAGE_STARTED: &str = "OutageStarted";
    // DeploymentsReady.
    pub const WORKLOADS_READY: &str = "AllWorkloadsReady";
    pub const ROLLOUT_IN_PROGRESS: &str = "RolloutInProgress";
    pub const ROLLOUT_STALLED: &str = "RolloutStalled";
    /// A host is taken out of service before its restart.
    pub const DRAINING: &str = "Draining";
    /// A drained host's return to service failed; the roll waits for it.
    pub const RETURN_TO_SERVICE_FAILED: &str = "ReturnToServiceFailed";
    pub const WAITING_FOR_DATABASE: &str = "WaitingForDatabase";
    pub const WAITING_FOR_REGISTRATION: &str = "WaitingForRegistration";
    // Ready.
    pub const READY: &str = "Ready";
    pub const NOT_READY: &str = "NotReady";
    // HighlyAvailable.
    pub const ENOUGH_REPLICAS: &str = "EnoughReplicas";
    pub const TOO_FEW_REPLICAS: &str = "TooFewReplicas";
    // KeystoneRegistered.
    pub const REGISTERED: &str = "Registered";
    pub const REGISTRATION_IN_PROGRESS: &str = "RegistrationInProgress";
    pub const REGISTRATION_RETRYING: &str = "RegistrationRetrying";
    pub const REGISTRATION_FAILED: &str = "RegistrationFailed";
    /// The Keystone named is not there, or its admin password's Secret is not.
    pub const KEYSTONE_NOT_USABLE: &str = "KeystoneNotUsable";
    pub const KEYSTONE_ADMIN_REFUSED: &str = "KeystoneAdminRefused";
    pub const SERVICE_PASSWORD_REFUSED: &str = "ServicePasswordRefused";
}

/// Event reasons that are not condition reasons.
pub mod event {
    pub const UPGRADE_INITIATED: &str = "UpgradeInitiated";
    pub const UPGRADE_COMPLETE: &str = "UpgradeComplete";
    pub const UPGRADE_ABORTED: &str = "UpgradeAborted";
    pub const UPGRADE_CHECK_COMPLETED: &str = "UpgradeCheckCompleted";
    pub const UPGRADE_CHECK_WARNINGS: &str = "UpgradeCheckWarnings";
    pub const UPGRADE_CHECK_EVENT_EMISSION_DEFERRED: &str = "UpgradeCheckEventEmissionDeferred";
    pub const STUCK_POD_REPLACED: &str = "StuckPodReplaced";
    /// The workloads an offline step stopped serve again: the outage's end.
    pub const OUTAGE_ENDED: &str = "OutageEnded";
    /// A host was taken out of service before its restart: how long it took,
    /// what was still in flight at the bound.
    pub const HOST_DRAINED: &str = "HostDrained";
    /// A host's drain Job failed; it restarts undrained.
    pub const DRAIN_FAILED: &str = "DrainFailed";
    /// The operator cannot see the resource's children (their watch never
    /// listed, typically missing RBAC); emitted by the operator, not the machine.
    pub const CACHE_NOT_READY: &str = "CacheNotReady";
    /// Passes keep failing on an error of the cluster, not a decision (an API
    /// server refusing a write, missing permissions); emitted by the operator.
    pub const RECONCILE_FAILING: &str = "ReconcileFailing";
}
