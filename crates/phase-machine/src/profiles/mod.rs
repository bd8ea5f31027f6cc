//! The services' profiles: pure data the machine runs. A new service adds a
//! module here, not a copy of the machine.

pub mod cinder;
pub mod ironic;

use crate::profile::Profile;

/// Every profile, for tests that run over all of them (the operator's registry
/// holds the same services, a test there says so).
pub fn all() -> Vec<Profile> {
    vec![cinder::profile(), ironic::profile()]
}
