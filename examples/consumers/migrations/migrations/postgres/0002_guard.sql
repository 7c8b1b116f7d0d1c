-- 0002: the ledger refuses a non-positive amount, whoever inserts it: a
-- PL/pgSQL trigger function, its body dollar-quoted (with ';' and quotes).
CREATE FUNCTION ledger_positive_amount() RETURNS trigger
LANGUAGE plpgsql AS $body$
BEGIN
	IF NEW.amount_cents <= 0 THEN
		-- the message's '%' are RAISE's placeholders; this ';' is not the end
		RAISE EXCEPTION 'ledger: amount % of event % must be positive; it''s refused',
			NEW.amount_cents, NEW.event_id;
	END IF;
	RETURN NEW;
END;
$body$;

CREATE TRIGGER ledger_positive_amount
BEFORE INSERT ON ledger
FOR EACH ROW EXECUTE FUNCTION ledger_positive_amount();
