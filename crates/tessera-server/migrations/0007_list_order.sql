-- List pages are ordered newest first with the id as the tie-break (`ORDER BY created_at DESC,
-- id DESC`). An index on (account_id, created_at) alone leaves SQLite sorting every matching row
-- in a temporary B-tree before LIMIT ("USE TEMP B-TREE FOR RIGHT PART OF ORDER BY"), which was
-- most of a campaign list's time in SQLite (docs/performance.md). With the tie-break in the
-- index a page is read in order and stops after LIMIT rows. Each new index replaces the old one,
-- whose columns are its prefix.
DROP INDEX campaigns_by_account;
CREATE INDEX campaigns_by_account ON campaigns (account_id, created_at, id);
DROP INDEX participants_by_account;
CREATE INDEX participants_by_account ON participants (account_id, created_at, id);
DROP INDEX submissions_by_account;
CREATE INDEX submissions_by_account ON submissions (account_id, created_at, id);
DROP INDEX notifications_by_account;
CREATE INDEX notifications_by_account ON notifications (account_id, created_at, id);
DROP INDEX withdrawals_by_account;
CREATE INDEX withdrawals_by_account ON withdrawals (account_id, created_at, id);
DROP INDEX transactions_by_account;
CREATE INDEX transactions_by_account ON transactions (account_id, created_at, reference);
