//! The operator CLI and the integrator's `call` command. Admin commands work on the store
//! directly (no server needed) and print one JSON object with `--json`.
pub mod admin;
pub mod call;
pub mod demo;
