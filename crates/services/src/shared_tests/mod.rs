//! The operator's shared rules (admission, conversion, `ratchet plan`, the
//! example Secrets, the witness's expectations) checked on the registered
//! services: the operator crate names no service, so its examples live here.

mod conversion;
mod install;
mod plan;
mod server;
mod validation;
mod witness;
