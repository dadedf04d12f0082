//! The command line: its definition ([`args`]), the dispatch of a parsed command ([`run`]), the
//! operator's `tessera admin …` (store commands, no server needed; one JSON object with
//! `--json`), `tessera serve` and `tessera sandbox` ([`serve`]), and the integrator's
//! `tessera call`. Exit codes: 0 success, 1 a failed admin command or an audit that found a
//! difference, 2 a configuration or store that cannot be opened (and `call`'s own failures).
pub mod admin;
pub mod args;
pub mod call;
pub mod demo;
pub mod serve;

use std::process::ExitCode;

use serde_json::Value;

pub use args::Cli;
use args::{
    AccountCommand, AdminCommand, ApprovalCommand, AuditCommand, Command, DomainCommand, KeyCommand, LedgerCommand,
    MemberCommand, ResellerCommand, SessionCommand, SetStatusArgs,
};

use crate::app::open_store;
use crate::config::{Config, Overrides};
use crate::sandbox::SandboxOptions;

/// Prints a line; a closed stdout (`| head`) ends the output quietly instead of panicking.
macro_rules! println {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}
pub(crate) use println;

/// Loads the configuration (flags over environment over file over defaults) and runs the command.
pub async fn run(cli: Cli) -> ExitCode {
    let over = Overrides {
        config_file: cli.config.clone(),
        data_dir: cli.data_dir.clone(),
        database_url: cli.database_url.clone(),
        listen: None,
    };
    let listen = match &cli.command {
        Command::Serve { listen, .. } => *listen,
        _ => None,
    };
    let cfg = match Config::load(&Overrides { listen, ..over }) {
        Ok(mut c) => {
            if let Command::Serve { no_workers: true, .. } = &cli.command {
                c.workers.enabled = false;
            }
            c
        }
        Err(e) => {
            eprintln!("error: configuration: {e:#}");
            return ExitCode::from(2);
        }
    };
    match cli.command {
        Command::Serve { demo, sandbox_listen, .. } => {
            exit_code(serve::serve(cfg, demo.then_some(sandbox_listen)).await)
        }
        Command::Admin { command } => run_admin(&cfg, command).await,
        Command::Sandbox { listen, notify_url, smtp_listen } => {
            crate::telemetry::init(cfg.log_format, &cfg.log_filter);
            // `--data-dir` here is where sandbox-ca.pem goes: the current directory unless given.
            let dir = cli.data_dir.clone().unwrap_or_else(|| std::path::PathBuf::from("."));
            let opts = SandboxOptions { listen, smtp_listen: Some(smtp_listen), notify_url };
            exit_code(serve::sandbox(opts, &dir).await)
        }
        Command::Call { method, path, data, field, header } => {
            match call::run(&method, &path, data.as_deref(), field.as_deref(), &header).await {
                Ok(code) => ExitCode::from(code as u8),
                Err(e) => {
                    eprintln!("error: {e:#}");
                    ExitCode::from(2)
                }
            }
        }
        Command::Openapi => match crate::http::openapi().to_pretty_json() {
            Ok(s) => {
                println!("{s}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        },
    }
}

/// A long-running command's end: 0, or 1 with the error on stderr.
fn exit_code(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            // A refusal to start beside another instance (D17.3) exits 2, like a bad configuration.
            if e.chain().any(|c| c.is::<crate::config::StartRefused>()) {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// Runs one `tessera admin …` command on the store and prints its object: indented `key: value`
/// lines, or one JSON line with `--json`; failures go to stderr (as JSON with `--json`).
async fn run_admin(cfg: &Config, command: AdminCommand) -> ExitCode {
    let (store, keyring) = match open_store(cfg).await {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(2);
        }
    };
    let (result, json) = match command {
        AdminCommand::Account { command } => match command {
            AccountCommand::Create { slug, name, status, out } => {
                (admin::account_create(&store, &slug, &name, &status).await, out.json)
            }
            AccountCommand::SetStatus(SetStatusArgs { account, status, out }) => {
                (admin::account_set_status(&store, &account, &status).await, out.json)
            }
            AccountCommand::List { out } => (admin::account_list(&store).await, out.json),
        },
        AdminCommand::Domain { command: DomainCommand::Add { account, hostname, primary, verified, out } } => {
            (admin::domain_add(&store, &account, &hostname, primary, verified).await, out.json)
        }
        AdminCommand::Key { command } => match command {
            KeyCommand::Create { account, kind, campaign, scopes, capability, out } => (
                admin::key_create(&store, &keyring, &account, &kind, campaign.as_deref(), &scopes, &capability).await,
                out.json,
            ),
            KeyCommand::List { account, out } => (admin::key_list(&store, &account).await, out.json),
            KeyCommand::Revoke { key_id, out } => (admin::key_revoke(&store, &key_id).await, out.json),
        },
        AdminCommand::Audit { command: AuditCommand::List { account, limit, out } } => {
            (admin::audit_list(&store, &account, limit).await, out.json)
        }
        AdminCommand::Ledger { command: LedgerCommand::Check { account, out } } => {
            (admin::ledger_check(&store, account.as_deref()).await, out.json)
        }
        AdminCommand::Approval { command: ApprovalCommand::List { account, out } } => {
            (admin::approval_list(&store, account.as_deref()).await, out.json)
        }
        AdminCommand::Approval { command: ApprovalCommand::Decide { id, status, note, out } } => {
            (admin::approval_decide(&store, &id, &status, note.as_deref()).await, out.json)
        }
        AdminCommand::Reseller { command: ResellerCommand::Create { account, owner_email, out } } => {
            (admin::reseller_create(&store, &account, &owner_email).await, out.json)
        }
        AdminCommand::Reseller { command: ResellerCommand::SetStatus(SetStatusArgs { account, status, out }) } => {
            (admin::reseller_set_status(&store, &account, &status).await, out.json)
        }
        AdminCommand::Session { command: SessionCommand::Create { email, out } } => {
            (admin::session_create(&store, &keyring, &email).await, out.json)
        }
        AdminCommand::Member { command: MemberCommand::Add { account, email, role, out } } => {
            (admin::member_add(&store, &account, &email, &role).await, out.json)
        }
        AdminCommand::Member { command: MemberCommand::List { account, out } } => {
            (admin::member_list(&store, &account).await, out.json)
        }
        AdminCommand::Member { command: MemberCommand::Remove { account, email, out } } => {
            (admin::member_remove(&store, &account, &email).await, out.json)
        }
    };
    // A report that says `ok: false` (the money audit) prints like any other and exits 1.
    let code = |v: &Value| if v.get("ok") == Some(&Value::Bool(false)) { ExitCode::from(1) } else { ExitCode::SUCCESS };
    match result {
        Ok(v) if json => {
            println!("{v}");
            code(&v)
        }
        Ok(v) => {
            print_human(&v, 0);
            code(&v)
        }
        Err(e) => {
            if json {
                eprintln!("{}", serde_json::json!({"error": e.message, "code": e.code}));
            } else {
                eprintln!("error: {} ({})", e.message, e.code);
            }
            ExitCode::from(1)
        }
    }
}

/// An admin answer for people: `key: value` lines, nested objects and lists indented by two.
fn print_human(v: &Value, indent: usize) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match v {
                    Value::Object(_) | Value::Array(_) => {
                        println!("{:indent$}{k}:", "");
                        print_human(v, indent + 2);
                    }
                    other => println!(
                        "{:indent$}{k}: {}",
                        "",
                        other.as_str().map(str::to_string).unwrap_or_else(|| other.to_string())
                    ),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                println!("{:indent$}-", "");
                print_human(item, indent + 2);
            }
        }
        other => println!("{:indent$}{other}", ""),
    }
}
