//! Peers Tessera talks to over HTTP: payment providers (D11) and, later, messaging gateways.
//! Every outbound call goes through [`outbound::Outbound`], which holds account-supplied URLs to
//! the private-address guard (D16.25).
pub mod outbound;
pub mod payments;
