//! The command line's definition: every subcommand, flag, help text and environment variable of
//! `tessera`. These are a contract (operators' scripts call them): change them only on purpose.
// The doc comments below are clap's help texts (`<URL>` is not HTML).
#![allow(rustdoc::invalid_html_tags)]

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(name = "tessera", version, about = "Tessera white-label organization and reseller API")]
pub struct Cli {
    /// TOML configuration file (overrides the embedded defaults).
    #[arg(long, global = true, env = "TESSERA_CONFIG")]
    pub config: Option<PathBuf>,
    /// Directory of the embedded database and the master key [default: ./data].
    #[arg(long, global = true)]
    pub data_dir: Option<PathBuf>,
    /// postgres://… to use PostgreSQL instead of the embedded SQLite.
    #[arg(long, global = true)]
    pub database_url: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run the HTTP service.
    Serve {
        /// Address to listen on [default: 127.0.0.1:8080; env TESSERA_LISTEN].
        #[arg(long)]
        listen: Option<std::net::SocketAddr>,
        /// Also create (once) a demo account on domain localhost, print its keys, and run the
        /// sandbox (providers, SMS, SMTP on 127.0.0.1:2525) with the demo account pointed at it;
        /// the sandbox's CA goes to <data-dir>/sandbox-ca.pem and is trusted for its mail.
        #[arg(long)]
        demo: bool,
        /// The sandbox's HTTP listener with --demo.
        #[arg(long, default_value = "127.0.0.1:8090")]
        sandbox_listen: std::net::SocketAddr,
        /// Serve the API only: run no background workers on this instance (env TESSERA_WORKERS=0).
        /// Other instances' workers take the jobs (D17.4).
        #[arg(long)]
        no_workers: bool,
    },
    /// Run the sandbox: provider APIs, checkout page, SMS gateway and SMTP sink, in memory, on
    /// loopback. For demos and tests; it moves no money. The SMTP sink offers STARTTLS with a
    /// certificate it generates; its CA is written to <DIR>/sandbox-ca.pem (--data-dir DIR,
    /// default: the current directory), for TESSERA_EXTRA_CA_FILE.
    Sandbox {
        /// HTTP listener.
        #[arg(long, default_value = "127.0.0.1:8090")]
        listen: std::net::SocketAddr,
        /// Tessera's base URL: provider callbacks go to <URL>/api/white-label/webhooks/<provider>.
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
pub struct JsonFlag {
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

// `admin account set-status` and `admin reseller set-status`. No doc comment here: each
// subcommand's help text is its variant's.
#[derive(Args)]
pub struct SetStatusArgs {
    #[arg(long)]
    pub account: String,
    #[arg(long)]
    pub status: String,
    #[command(flatten)]
    pub out: JsonFlag,
}

#[derive(Subcommand)]
pub enum AdminCommand {
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
    /// Organization members who sign in to the console (D17.28, D17.43).
    Member {
        #[command(subcommand)]
        command: MemberCommand,
    },
}

#[derive(Subcommand)]
pub enum MemberCommand {
    /// Adds a member of an account with one role; they sign in at /console with a mailed passcode.
    Add {
        #[arg(long)]
        account: String,
        #[arg(long)]
        email: String,
        /// owner, manager, finance or gate.
        #[arg(long)]
        role: String,
        #[command(flatten)]
        out: JsonFlag,
    },
    /// Lists an account's members, oldest first.
    List {
        #[arg(long)]
        account: String,
        #[command(flatten)]
        out: JsonFlag,
    },
    /// Removes a member and ends their console sessions (the last owner stays).
    Remove {
        #[arg(long)]
        account: String,
        #[arg(long)]
        email: String,
        #[command(flatten)]
        out: JsonFlag,
    },
}

#[derive(Subcommand)]
pub enum ResellerCommand {
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
    SetStatus(SetStatusArgs),
}

#[derive(Subcommand)]
pub enum SessionCommand {
    /// Mints a portal session for an existing user: {token, expiresAt}.
    Create {
        #[arg(long)]
        email: String,
        #[command(flatten)]
        out: JsonFlag,
    },
}

#[derive(Subcommand)]
pub enum ApprovalCommand {
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
pub enum LedgerCommand {
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
pub enum AuditCommand {
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
pub enum AccountCommand {
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
    SetStatus(SetStatusArgs),
    List {
        #[command(flatten)]
        out: JsonFlag,
    },
}

#[derive(Subcommand)]
pub enum DomainCommand {
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
pub enum KeyCommand {
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
