-- D17.10: e-mail addresses are stored as given and matched in lower case. These indexes serve
-- the lower-cased lookups: a ticket holder's tickets in a campaign (my-tickets), users and
-- member invitations by e-mail (portal sign-in, invitations).
CREATE INDEX tickets_by_campaign_lower_email ON tickets (campaign_id, lower(attendee_email));
CREATE INDEX users_by_lower_email ON users (lower(email));
CREATE INDEX reseller_members_by_lower_email ON reseller_members (lower(email));
