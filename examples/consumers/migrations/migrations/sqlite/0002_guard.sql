-- 0002: the ledger refuses a non-positive amount, whoever inserts it; the
-- trigger's body has statements of its own (and a ';' in its message).
CREATE TRIGGER ledger_positive_amount
BEFORE INSERT ON ledger
FOR EACH ROW WHEN NEW.amount_cents <= 0
BEGIN
	SELECT RAISE(ABORT, 'ledger: amount must be positive; got a zero or less');
END;
