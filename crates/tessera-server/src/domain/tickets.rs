//! Tickets (D7, D16.9): whether a ticket may be used at the gate.
str_enum! {
    /// A ticket is `valid` (it may be checked in, once) or `void` (never).
    pub enum TicketStatus {
        Valid = "valid",
        Void = "void",
    } else "must be valid or void"
}
