//! The one binary: `tessera serve | admin | call | openapi | sandbox`.
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// mimalloc instead of the system allocator: the request path allocates small, short-lived
/// buffers (headers, bodies, envelopes) on two runtime threads, where glibc's malloc showed as
/// ~5 % of a signed request's CPU (docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use serde_json::Value;
use tessera_server::app::{open_store, shutdown_signal, Application};
use tessera_server::cli::{admin, call, demo};
use tessera_server::config::{Config, Overrides};
use tessera_server::sandbox::{Sandbox, SandboxOptions};

#[derive(Parser)]
#[command(name = "tessera", version, about = "Tessera white-label organization and reseller API")]
struct Cli {
    /// TOML configuration file (overrides the embedded defaults).
    #[arg(long, global = true, env = "TESSERA_CONFIG")]
    config: Option<PathBuf>,
    /// Directory of the embedded database and the master key [default: ./data].
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    /// postgres://… to use PostgreSQL instead of the embedded SQLite.
    #[arg(long, global = true)]
    database_url: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP service.
    Serve {
        /// Address to listen on [default: 127.0.0.1:8080; env TESSERA_LISTEN].
        #[arg(long)]
        listen: Option<std::net::SocketAddr>,
        /// Also create (once) a demo account on domain localhost, print its keys, and run the
        /// sandbox (providers, SMS, SMTP on 127.0.0.1:2525) with the demo account pointed at it.
        #[arg(long)]
        demo: bool,
        /// The sandbox's HTTP listener with --demo.
        #[arg(long, default_value = "127.0.0.1:8090")]
        sandbox_listen: std::net::SocketAddr,
    },
    /// Run the sandbox: provider APIs, checkout page, SMS gateway and SMTP sink, in memory, on
    /// loopback. For demos and tests; it moves no money.
    Sandbox {
        /// HTTP listener.
        #[arg(long, default_value = "127.0.0.1:8090")]
        listen: std::net::SocketAddr,
        /// Tessera's base URL: webhooks go to <URL>/api/white-label/webhooks/<provider>.
        #[arg(long)]
        notify_url: Option<String>,
        /// SMTP sink listener.
        #[arg(long, default_value = "127.0.0.1:2525")]
        smtp_listen: std::net::SocketAddr,
    },
    /// Operator commands on the store (no server needed).
    Admin {
        #[command(subcommand)]
        command: AdminCommand,
    },
    /// Send one signed request (TESSERA_URL, TESSERA_KEY_ID, TESSERA_KEY_SECRET).
    Call {
        method: String,
        path: String,
        /// JSON body, sent and signed byte for byte.
        #[arg(long)]
        data: Option<String>,
        /// Print only this field of a successful answer, e.g. data.id.
        #[arg(long)]
        field: Option<String>,
        /// An extra header, `Name: value` (e.g. `X-Idempotency-Key: payout-1`); repeatable.
        #[arg(short = 'H', long = "header")]
        header: Vec<String>,
    },
    /// Print the OpenAPI 3.1 document.
    Openapi,
}

#[derive(Args)]
struct JsonFlag {
    /// Print one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum AdminCommand {
    /// Organization accounts.
    Account {
        #[command(subcommand)]
        command: AccountCommand,
    },
    /// Approved website domains.
    Domain {
        #[command(subcommand)]
        command: DomainCommand,
    },
    /// API keys.
    Key {
        #[command(subcommand)]
        command: KeyCommand,
    },
    /// The audit log of an account.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// The money audit.
    Ledger {
        #[command(subcommand)]
        command: LedgerCommand,
    },
    /// Approval requests: withdrawals above the account's threshold, and the portal's (D14.2).
    Approval {
        #[command(subcommand)]
        command: ApprovalCommand,
    },
    /// Reseller profiles of accounts (the reseller portal, D15.1, D16.18).
    Reseller {
        #[command(subcommand)]
        command: ResellerCommand,
    },
    /// Reseller portal sessions (D15.1).
    Session {
        #[command(subcommand)]
        command: SessionCommand,
    },
}

#[derive(Subcommand)]
enum ResellerCommand {
    /// Makes an account a reseller: its profile (draft) and owner (member type owner, role admin).
    Create {
        #[arg(long)]
        account: String,
        #[arg(long)]
        owner_email: String,
        #[command(flatten)]
        out: JsonFlag,
    },
    /// Moves the profile: enabled, suspended or disabled (only the operator lifts a suspension).
    SetStatus {
        #[arg(long)]
        account: String,
        #[arg(long)]
        status: String,
        #[command(flatten)]
        out: JsonFlag,
    },
}

#[derive(Subcommand)]
enum SessionCommand {
    /// Mints a portal session for an existing user: {token, expiresAt}.
    Create {
        #[arg(long)]
        email: String,
        #[command(flatten)]
        out: JsonFlag,
    },
}

#[derive(Subcommand)]
enum ApprovalCommand {
    /// Lists approval requests, oldest first, with their status.
    List {
        /// Only this account (slug); every account when omitted.
        #[arg(long)]
        account: Option<String>,
        #[command(flatten)]
        out: JsonFlag,
    },
    /// Decides a pending request and applies its effect (a withdrawal is paid out or cancelled).
    Decide {
        #[arg(long)]
        id: String,
        /// approved or rejected.
        #[arg(long)]
        status: String,
        #[arg(long)]
        note: Option<String>,
        #[command(flatten)]
        out: JsonFlag,
    },
}

#[derive(Subcommand)]
enum LedgerCommand {
    /// Checks that the ledger equals confirmed charges less fees (less withdrawals), that tickets
    /// issued equal quantities paid and votes equal amounts paid / vote_price. Exits 1 on any
    /// difference.
    Check {
        /// Only this account (slug); every account when omitted.
        #[arg(long)]
        account: Option<String>,
        #[command(flatten)]
        out: JsonFlag,
    },
}

#[derive(Subcommand)]
enum AuditCommand {
    List {
        #[arg(long)]
        account: String,
        /// Newest entries to show (1-1000).
        #[arg(long, default_value_t = 100)]
        limit: i64,
        #[command(flatten)]
        out: JsonFlag,
    },
}

#[derive(Subcommand)]
enum AccountCommand {
    Create {
        #[arg(long)]
        slug: String,
        #[arg(long)]
        name: String,
        #[arg(long, default_value = "enabled")]
        status: String,
        #[command(flatten)]
        out: JsonFlag,
    },
    SetStatus {
        #[arg(long)]
        account: String,
        #[arg(long)]
        status: String,
        #[command(flatten)]
        out: JsonFlag,
    },
    List {
        #[command(flatten)]
        out: JsonFlag,
    },
}

#[derive(Subcommand)]
enum DomainCommand {
    Add {
        #[arg(long)]
        account: String,
        #[arg(long)]
        hostname: String,
        #[arg(long)]
        primary: bool,
        #[arg(long)]
        verified: bool,
        #[command(flatten)]
        out: JsonFlag,
    },
}

#[derive(Subcommand)]
enum KeyCommand {
    Create {
        #[arg(long)]
        account: String,
        /// private, public or campaign.
        #[arg(long)]
        kind: String,
        /// The campaign a campaign key is limited to.
        #[arg(long)]
        campaign: Option<String>,
        /// Comma-separated scopes, e.g. settings:read,campaigns:write.
        #[arg(long)]
        scopes: String,
        /// Extra capability (withdrawals); repeatable.
        #[arg(long)]
        capability: Vec<String>,
        #[command(flatten)]
        out: JsonFlag,
    },
    List {
        #[arg(long)]
        account: String,
        #[command(flatten)]
        out: JsonFlag,
    },
    Revoke {
        #[arg(long)]
        key_id: String,
        #[command(flatten)]
        out: JsonFlag,
    },
}

/// Prints a line; a closed stdout (`| head`) ends the output quietly instead of panicking.
macro_rules! println {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

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
            AccountCommand::SetStatus { account, status, out } => {
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
        AdminCommand::Reseller { command: ResellerCommand::SetStatus { account, status, out } } => {
            (admin::reseller_set_status(&store, &account, &status).await, out.json)
        }
        AdminCommand::Session { command: SessionCommand::Create { email, out } } => {
            (admin::session_create(&store, &keyring, &email).await, out.json)
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

fn exe_for_display() -> String {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("tessera"));
    match std::env::current_dir().ok().and_then(|cwd| exe.strip_prefix(&cwd).ok().map(|p| p.to_path_buf())) {
        Some(rel) => format!("./{}", rel.display()),
        None => exe.display().to_string(),
    }
}

/// The demo's SMTP sink.
const DEMO_SMTP: &str = "127.0.0.1:2525";

async fn serve(mut cfg: Config, demo_sandbox: Option<std::net::SocketAddr>) -> anyhow::Result<()> {
    tessera_server::telemetry::init(cfg.log_format, &cfg.log_filter);
    let stop = shutdown_signal()?;
    let sandbox = match demo_sandbox {
        Some(listen) => {
            // The demo account's provider and SMS URLs are the sandbox's, on loopback (D16.25).
            cfg.security.allow_private_endpoints = true;
            let smtp: std::net::SocketAddr = DEMO_SMTP.parse()?;
            Some(Sandbox::start(SandboxOptions { listen, smtp_listen: Some(smtp), notify_url: None }).await?)
        }
        None => None,
    };
    let app = Application::build(cfg.clone()).await?;
    let addr = app.local_addr();
    tracing::info!(%addr, database = if cfg.database_url.is_empty() { "sqlite" } else { "postgres" }, "tessera listening");
    if let Some(sandbox) = &sandbox {
        let state = app.state();
        let keys = demo::ensure(&state.store, state.directory.keyring(), cfg.data_dir()).await?;
        let host = if addr.ip().is_unspecified() { "127.0.0.1".to_string() } else { addr.ip().to_string() };
        let base_url = format!("http://{host}:{}", addr.port());
        sandbox.set_notify_url(base_url.clone());
        let smtp = sandbox.smtp_addr().map(|a| a.to_string()).unwrap_or_else(|| DEMO_SMTP.to_string());
        let smtp_port = sandbox.smtp_addr().map(|a| a.port()).unwrap_or(2525);
        demo::point_at_sandbox(&state.store, state.directory.keyring(), sandbox.base_url(), ("127.0.0.1", smtp_port))
            .await?;
        println!("{}", demo::banner(&keys, &base_url, &exe_for_display()));
        println!("{}", demo::sandbox_banner(sandbox.base_url(), &smtp));
        state.directory.refresh().await?;
    }
    let served = app.run_until_stopped(stop).await;
    drop(sandbox);
    served
}

async fn run_sandbox(opts: SandboxOptions) -> anyhow::Result<()> {
    let stop = shutdown_signal()?;
    let sandbox = Sandbox::start(opts).await?;
    println!(
        "Tessera sandbox on {base} (in memory; for demos and tests, it moves no money)\n  \
         provider APIs: {base}/provider_a (Paystack's API), {base}/provider_b, {base}/provider_c (gateway protocol)\n  \
         SMS gateway: {base}/sms/messages   SMTP sink: {smtp}\n  \
         control API: {base}/sandbox/…  (docs/providers.md)",
        base = sandbox.base_url(),
        smtp = sandbox.smtp_addr().map(|a| a.to_string()).unwrap_or_else(|| "off".into()),
    );
    stop.await;
    sandbox.stop();
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
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
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: configuration: {e:#}");
            return ExitCode::from(2);
        }
    };
    match cli.command {
        Command::Serve { demo, sandbox_listen, .. } => match serve(cfg, demo.then_some(sandbox_listen)).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::FAILURE
            }
        },
        Command::Admin { command } => run_admin(&cfg, command).await,
        Command::Sandbox { listen, notify_url, smtp_listen } => {
            tessera_server::telemetry::init(cfg.log_format, &cfg.log_filter);
            match run_sandbox(SandboxOptions { listen, smtp_listen: Some(smtp_listen), notify_url }).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e:#}");
                    ExitCode::FAILURE
                }
            }
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
        Command::Openapi => match tessera_server::http::openapi().to_pretty_json() {
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
