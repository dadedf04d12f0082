//! Votes by dial (D17.19–22, D17.40): the phone numbers and networks the gateways send, the
//! inputs of a dial string, the steps of a session and the screens it shows. No I/O: the flow
//! (`flows::ussd`) looks things up and stores the session; this module only says what a step
//! is, what an input means and what the caller reads.
//!
//! Every screen is at most [`SCREEN_MAX`] characters (counted without the gateway's `CON `/`END `
//! prefix): names are shortened before a screen is built, and [`fit`] cuts what is still over.
use serde::{Deserialize, Serialize};

/// The longest screen a handset shows in one USSD page.
pub const SCREEN_MAX: usize = 160;

/// Tries at the code and count screens before the session ends (D17.20).
pub const TRIES: u8 = 3;

/// A re-dial within this long of a pending USSD vote offers the pending menu (D17.22), ms.
pub const PENDING_WINDOW_MS: i64 = 10 * 60 * 1000;

/// The email a USSD vote carries (D17.21): `<msisdn>@ussd.invalid`.
pub fn email_of(msisdn: &str) -> String {
    format!("{msisdn}@ussd.invalid")
}

str_enum! {
    /// The gateways whose wire the USSD route speaks (D17.19).
    pub enum Gateway {
        AfricasTalking = "africastalking",
        Hubtel = "hubtel",
        Nalo = "nalo",
        Arkesel = "arkesel",
    } else "unknown gateway; one of africastalking, hubtel, nalo, arkesel"
}

str_enum! {
    /// Ghana's mobile-money networks, as Paystack names them (D17.21).
    pub enum Network {
        Mtn = "mtn",
        Vodafone = "vod",
        AirtelTigo = "atl",
    } else "must be one of mtn, vod, atl"
}

impl Network {
    /// Reads a gateway's network field (Africa's Talking's MCC-MNC codes, the others' names),
    /// case-insensitively; `None` when it names no known network.
    pub fn from_gateway(s: &str) -> Option<Network> {
        let s = s.trim().to_ascii_lowercase();
        match s.as_str() {
            "62001" | "mtn" => Some(Network::Mtn),
            "62002" | "vod" | "vodafone" | "telecel" => Some(Network::Vodafone),
            "62003" | "62006" | "atl" | "airteltigo" | "airtel" | "tigo" | "at" => Some(Network::AirtelTigo),
            _ if s.contains("mtn") => Some(Network::Mtn),
            _ if s.contains("voda") || s.contains("telecel") => Some(Network::Vodafone),
            _ if s.contains("airtel") || s.contains("tigo") => Some(Network::AirtelTigo),
            _ => None,
        }
    }

    /// The network a Ghanaian number belongs to by its prefix (ported numbers aside).
    pub fn from_msisdn(msisdn: &str) -> Option<Network> {
        let local = local_form(msisdn);
        match local.get(..3)? {
            "024" | "025" | "053" | "054" | "055" | "059" => Some(Network::Mtn),
            "020" | "050" => Some(Network::Vodafone),
            "026" | "027" | "056" | "057" => Some(Network::AirtelTigo),
            _ => None,
        }
    }
}

/// A phone number as the gateways send it (`233241234567`, `+233 24 123 4567`, `0241234567`)
/// in one form, international digits without `+` (`233241234567`); `None` when it is not a
/// phone number.
pub fn normalize_msisdn(raw: &str) -> Option<String> {
    let digits: String = raw.chars().filter(|c| !matches!(c, ' ' | '-' | '+')).collect();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let international = match digits.strip_prefix('0') {
        Some(rest) if digits.len() == 10 => format!("233{rest}"),
        _ => digits,
    };
    (8..=15).contains(&international.len()).then_some(international)
}

/// A Ghanaian number in the local form people read and Paystack takes (`0241234567`); other
/// numbers as they are.
pub fn local_form(msisdn: &str) -> String {
    match msisdn.strip_prefix("233") {
        Some(rest) if rest.len() == 9 => format!("0{rest}"),
        _ => msisdn.to_string(),
    }
}

/// The inputs typed after the service code in a whole dial string (D17.20, D17.40):
/// `*920*44*ABC*5#` with service code `*920*44#` → `["ABC", "5"]`. A dial that does not start
/// with the service code (or no service code configured) carries none.
pub fn dial_inputs(service_code: Option<&str>, dial: &str) -> Vec<String> {
    let Some(code) = service_code.map(|c| c.trim().trim_end_matches('#')).filter(|c| !c.is_empty()) else {
        return Vec::new();
    };
    let dial = dial.trim().trim_end_matches('#');
    match dial.strip_prefix(code) {
        Some(rest) if rest.starts_with('*') => split_inputs(rest),
        _ => Vec::new(),
    }
}

/// Africa's Talking's `text`: every input so far joined by `*` (empty before the first).
pub fn split_inputs(text: &str) -> Vec<String> {
    text.split('*').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

/// Inputs are digits and letters only (D17.20); anything else is never a valid answer.
pub fn is_plain(input: &str) -> bool {
    !input.is_empty() && input.len() <= 32 && input.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// A vote count typed at the count screen: a whole number from 1 to `max`.
pub fn parse_count(input: &str, max: i64) -> Option<i64> {
    if !is_plain(input) || !input.bytes().all(|b| b.is_ascii_digit()) || input.len() > 9 {
        return None;
    }
    input.parse::<i64>().ok().filter(|n| (1..=max).contains(n))
}

/// Where a caller is in the flow (D17.20, D17.22), stored with the session as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// The phone has a pending USSD vote: 1 send the prompt again, 2 cancel it, 3 a new vote.
    Pending { reference: String },
    /// Asking for the nominee's code; `tries` wrong ones so far.
    AskCode { tries: u8 },
    /// Asking how many votes for the nominee; `tries` bad counts so far.
    AskCount { participant_id: String, tries: u8 },
    /// Asking to confirm `votes` votes for the nominee.
    Confirm { participant_id: String, votes: i64 },
    /// The session is over; its last screen is stored with it.
    Ended,
}

/// What the caller sees of a nominee.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nominee {
    pub name: String,
    pub campaign: String,
    /// Pesewas per vote.
    pub vote_price: i64,
}

/// `GHS 8.75`.
pub fn ghs(pesewas: i64) -> String {
    format!("GHS {}.{:02}", pesewas / 100, (pesewas % 100).abs())
}

/// A name cut to `max` characters (with `…` when cut).
fn short(s: &str, max: usize) -> String {
    let s = s.trim();
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A screen cut to [`SCREEN_MAX`] characters.
pub fn fit(screen: String) -> String {
    if screen.chars().count() <= SCREEN_MAX {
        return screen;
    }
    screen.chars().take(SCREEN_MAX).collect()
}

/// The screens of the flow (D17.20, D17.22, D17.40).
pub mod screen {
    use super::{fit, ghs, local_form, short, Nominee};

    pub fn ask_code(title: &str) -> String {
        fit(format!("{}\nEnter the nominee code:", short(title, 60)))
    }

    pub fn unknown_code(code: &str) -> String {
        fit(format!("Unknown code {}.\nEnter the nominee code:", short(code, 16)))
    }

    pub fn unknown_code_end() -> String {
        "Unknown code. No vote was made. Goodbye.".to_string()
    }

    pub fn not_votable(name: &str) -> String {
        fit(format!("{} cannot receive votes.\nEnter another nominee code:", short(name, 40)))
    }

    /// A nominee who stopped taking votes between the count and the confirmation.
    pub fn not_votable_end(name: &str) -> String {
        fit(format!("{} cannot receive votes.", short(name, 40)))
    }

    pub fn closed(name: &str) -> String {
        fit(format!("Voting for {} is closed.\nEnter another nominee code:", short(name, 40)))
    }

    pub fn too_many_tries() -> String {
        "Too many tries. No vote was made. Goodbye.".to_string()
    }

    pub fn ask_count(n: &Nominee, max: i64) -> String {
        fit(format!(
            "{} ({})\n{} per vote.\nHow many votes? (1-{max})",
            short(&n.name, 40),
            short(&n.campaign, 40),
            ghs(n.vote_price)
        ))
    }

    pub fn bad_count(max: i64) -> String {
        format!("Invalid number.\nEnter a number from 1 to {max}:")
    }

    pub fn bad_count_end(max: i64) -> String {
        format!("Enter a number from 1 to {max} next time. No vote was made.")
    }

    pub fn confirm(n: &Nominee, votes: i64, total: i64) -> String {
        fit(format!("{votes} vote(s) for {}: {}\n1. Confirm\n2. Cancel", short(&n.name, 60), ghs(total)))
    }

    pub fn confirmed(n: &Nominee, votes: i64, total: i64, msisdn: &str) -> String {
        fit(format!(
            "Approve {} on {} when prompted to complete {votes} vote(s) for {}.",
            ghs(total),
            local_form(msisdn),
            short(&n.name, 40)
        ))
    }

    pub fn cancelled() -> String {
        "Cancelled. No charge was made.".to_string()
    }

    pub fn pending(name: &str, total: i64) -> String {
        fit(format!(
            "You have a pending vote: {} for {}.\n1. Send approval prompt again\n2. Cancel it\n3. New vote",
            ghs(total),
            short(name, 40)
        ))
    }

    pub fn prompt_again(total: i64, msisdn: &str) -> String {
        format!("The approval prompt for {} is on its way to {}.", ghs(total), local_form(msisdn))
    }

    pub fn pending_cancelled() -> String {
        "Your pending vote was cancelled. No charge will be made.".to_string()
    }

    pub fn not_available() -> String {
        "Voting by phone is not available now. Please try again later.".to_string()
    }

    pub fn nothing_open() -> String {
        "No voting is open on this code now.".to_string()
    }

    pub fn failed() -> String {
        "Sorry, something went wrong. No charge was made. Please dial again.".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phone_numbers_come_to_one_form() {
        assert_eq!(normalize_msisdn("233241234567").as_deref(), Some("233241234567"));
        assert_eq!(normalize_msisdn("+233 24 123 4567").as_deref(), Some("233241234567"));
        assert_eq!(normalize_msisdn("0241234567").as_deref(), Some("233241234567"));
        assert_eq!(normalize_msisdn("24x"), None);
        assert_eq!(normalize_msisdn(""), None);
        assert_eq!(local_form("233241234567"), "0241234567");
    }

    #[test]
    fn networks_read_from_every_gateway_and_from_the_prefix() {
        for (s, n) in [
            ("62001", Network::Mtn),
            ("MTN", Network::Mtn),
            ("vodafone", Network::Vodafone),
            ("62002", Network::Vodafone),
            ("AIRTELTIGO", Network::AirtelTigo),
            ("62006", Network::AirtelTigo),
        ] {
            assert_eq!(Network::from_gateway(s), Some(n), "{s}");
        }
        assert_eq!(Network::from_gateway("glo"), None);
        assert_eq!(Network::from_msisdn("233201234567"), Some(Network::Vodafone));
        assert_eq!(Network::from_msisdn("233571234567"), Some(Network::AirtelTigo));
    }

    #[test]
    fn dial_through_inputs_follow_the_service_code() {
        assert_eq!(dial_inputs(Some("*920*44#"), "*920*44*abc*5#"), vec!["abc", "5"]);
        assert!(dial_inputs(Some("*920*44#"), "*920*44#").is_empty());
        assert!(dial_inputs(Some("*920*44#"), "*920*441*5#").is_empty());
        assert!(dial_inputs(None, "*920*44*abc#").is_empty());
        assert_eq!(split_inputs("ABC*5*1"), vec!["ABC", "5", "1"]);
        assert!(split_inputs("").is_empty());
    }

    #[test]
    fn counts_are_whole_numbers_in_range() {
        assert_eq!(parse_count("5", 10), Some(5));
        for bad in ["0", "11", "x", "-1", "1.5", "99999999999"] {
            assert_eq!(parse_count(bad, 10), None, "{bad}");
        }
    }

    #[test]
    fn every_screen_fits_even_with_long_names() {
        let long = "N".repeat(300);
        let n = Nominee { name: long.clone(), campaign: long.clone(), vote_price: 123_456_789 };
        let screens = [
            screen::ask_code(&long),
            screen::unknown_code(&long),
            screen::not_votable(&long),
            screen::not_votable_end(&long),
            screen::closed(&long),
            screen::ask_count(&n, 1_000_000),
            screen::bad_count(1_000_000),
            screen::bad_count_end(1_000_000),
            screen::confirm(&n, 1_000_000, i64::MAX / 2),
            screen::confirmed(&n, 1_000_000, i64::MAX / 2, "233241234567"),
            screen::pending(&long, i64::MAX / 2),
            screen::prompt_again(i64::MAX / 2, "233241234567"),
        ];
        for s in screens {
            assert!(s.chars().count() <= SCREEN_MAX, "{} chars: {s}", s.chars().count());
        }
        assert_eq!(ghs(875), "GHS 8.75");
    }
}
