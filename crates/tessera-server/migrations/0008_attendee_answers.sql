-- Attendee answers (D17.12): a ticket purchase carries one attendee per ticket (name, e-mail and
-- answers to the ticket type's required_attendee_fields) from initialization to settlement, as a
-- JSON array on its transaction (NULL when none were sent); each ticket keeps its attendee's
-- answers as a JSON object (NULL when none).
ALTER TABLE transactions ADD COLUMN attendees TEXT;
ALTER TABLE tickets ADD COLUMN attendee_answers TEXT;
