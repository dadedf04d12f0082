//! The gateway protocol of docs/providers.md, spoken by `provider_b` and `provider_c`.
