//! Modules (D17.14, D17.44): `operations.modules.<name>: false` turns a module's routes off for
//! the account (403 `module_disabled`). One guard, called first by every route a module covers;
//! it reads the cached account view (no store read per request once the view is in memory).
use serde_json::Value;

use crate::domain::settings::OperationsSettings;
use crate::domain::DomainError;
use crate::state::AppState;

use super::FlowResult;

/// The modules of `operations.modules` and what they cover (D17.44).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Module {
    /// Vote payments and participant creation.
    Voting,
    /// Donation payments.
    Donations,
    /// Ticket payments and the ticket-type routes.
    Ticketing,
    /// The submission routes.
    Submissions,
    /// The my-tickets routes.
    MyTickets,
}

impl Module {
    pub fn name(self) -> &'static str {
        match self {
            Module::Voting => "voting",
            Module::Donations => "donations",
            Module::Ticketing => "ticketing",
            Module::Submissions => "submissions",
            Module::MyTickets => "myTickets",
        }
    }
}

/// Whether `module` is on in a stored `operations` object (on unless set to `false`).
pub fn is_on(operations: Option<&Value>, module: Module) -> bool {
    let ops = OperationsSettings::from_value(operations.unwrap_or(&Value::Null));
    ops.modules.iter().find(|(m, _)| *m == module.name()).is_none_or(|(_, on)| *on)
}

/// Whether the account has `module` on (a route that does not refuse, but leaves out what the
/// module serves, asks this).
pub async fn enabled(state: &AppState, account_id: &str, module: Module) -> FlowResult<bool> {
    let view = state.directory.account_view(account_id).await?;
    Ok(is_on(view.settings.get("operations"), module))
}

/// Refuses with 403 `module_disabled` when the account turned `module` off.
pub async fn require(state: &AppState, account_id: &str, module: Module) -> FlowResult<()> {
    if enabled(state, account_id, module).await? {
        return Ok(());
    }
    Err(DomainError::Refused {
        status: 403,
        code: "module_disabled",
        message: format!("the {} module is turned off for this account (operations.modules)", module.name()),
    }
    .into())
}
