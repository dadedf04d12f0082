-- Real wires (D18.1–3, D18.45): what a provider says of a paid charge beyond its amount, kept for
-- its refund. Flutterwave refunds by its own transaction id (`data.id` of the verify); Hubtel
-- refunds by sending mobile money back to the paying number, so it needs the payment method
-- (`card` | `mobile_money`), the payer (233…) and the payer's network (mtn | vod | atl).
ALTER TABLE transactions ADD COLUMN provider_charge_id TEXT;
ALTER TABLE transactions ADD COLUMN pay_method TEXT;
ALTER TABLE transactions ADD COLUMN payer TEXT;
ALTER TABLE transactions ADD COLUMN payer_network TEXT;
