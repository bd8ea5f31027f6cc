//! The services' profiles: pure data the machine runs. A new service adds a
//! module here, not a copy of the machine.

pub mod cinder;
pub mod ironic;
