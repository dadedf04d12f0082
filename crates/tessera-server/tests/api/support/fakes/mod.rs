//! Fakes of the real providers, built from their own documentation (D18).
pub mod hubtel;
