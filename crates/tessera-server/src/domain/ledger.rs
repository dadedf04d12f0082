//! The ledger's vocabulary (D5.6, D12.4, D16.2–3): entry kinds and their signs. A balance is a
//! sum of entries, never a stored number; every money movement is one entry. No I/O.

/// Entry kinds. Signs: a confirmed charge credits its amount (`charge`, +), its fee debits
/// (`fee`, −); a withdrawal holds its amount at once (`withdrawal_hold`, −), gives the hold back
/// when it ends however it ends (`withdrawal_release`, +), and debits the amount when the
/// transfer completed (`withdrawal_debit`, −).
pub mod kind {
    pub const CHARGE: &str = "charge";
    pub const FEE: &str = "fee";
    pub const WITHDRAWAL_HOLD: &str = "withdrawal_hold";
    pub const WITHDRAWAL_RELEASE: &str = "withdrawal_release";
    pub const WITHDRAWAL_DEBIT: &str = "withdrawal_debit";
    /// A refund holds its amount at creation (−), gives it back when it ends (+), and debits it
    /// when the provider refunded it (−), as a withdrawal does (D17.34, D17.38). Reference: the
    /// refund id.
    pub const REFUND_HOLD: &str = "refund_hold";
    pub const REFUND_RELEASE: &str = "refund_release";
    pub const REFUND_DEBIT: &str = "refund_debit";
    /// Every kind, for the audit (an entry of another kind is a discrepancy).
    pub const ALL: [&str; 8] =
        [CHARGE, FEE, WITHDRAWAL_HOLD, WITHDRAWAL_RELEASE, WITHDRAWAL_DEBIT, REFUND_HOLD, REFUND_RELEASE, REFUND_DEBIT];
}
