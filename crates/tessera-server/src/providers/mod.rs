//! Peers Tessera talks to: payment providers (D11) and messaging transports (SMTP and SMS
//! gateways, D13.3). Every outbound HTTP call goes through [`outbound::Outbound`], which holds
//! account-supplied URLs to the private-address guard (D16.25).
pub mod messaging;
pub mod outbound;
pub mod payments;
