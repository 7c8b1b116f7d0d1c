package backend

import (
	"strings"
	"testing"
)

// TestRefusalNamesWhatBelongsToTheServer: statements that make or change
// a role, a database, a tablespace, an extension, the server's
// configuration or a replication slot are refused and named, also in a
// DO block or a function body, and in the string a body EXECUTEs; the
// same words as names, in data or in the database's own objects are not.
func TestRefusalNamesWhatBelongsToTheServer(t *testing.T) {
	refused := map[string]string{
		"CREATE ROLE app_reader":                                                         "role app_reader",
		"create user \"App\" with password 'x'":                                          "role App",
		"ALTER ROLE app SET search_path = x":                                             "role app",
		"DROP USER IF EXISTS app":                                                        "role app",
		"CREATE GROUP readers":                                                           "role readers",
		"GRANT pg_read_all_data TO app":                                                  "the membership of role app",
		"REVOKE readers FROM app":                                                        "the membership of role app",
		"GRANT CONNECT ON DATABASE test TO app":                                          "privileges on database test",
		"GRANT SET ON PARAMETER work_mem TO app":                                         "privileges on parameter work_mem",
		"CREATE DATABASE other":                                                          "database other",
		"ALTER DATABASE test SET timezone = 'UTC'":                                       "database test",
		"CREATE TABLESPACE fast LOCATION '/tmp'":                                         "tablespace fast",
		"CREATE EXTENSION pgcrypto":                                                      "extension pgcrypto",
		"CREATE EXTENSION IF NOT EXISTS \"uuid-ossp\"":                                   "extension uuid-ossp",
		"DROP EXTENSION hstore":                                                          "extension hstore",
		"ALTER SYSTEM SET work_mem = '64MB'":                                             "the server's configuration",
		"COMMENT ON ROLE app IS 'x'":                                                     "a comment on role app",
		"SECURITY LABEL FOR selinux ON DATABASE test IS 'x'":                             "a security label on database test",
		"REASSIGN OWNED BY app TO postgres":                                              "every object of app",
		"DROP OWNED BY app":                                                              "every object and privilege of app",
		"CREATE SUBSCRIPTION s CONNECTION 'x' PUBLICATION p":                             "subscription s",
		"SELECT pg_create_logical_replication_slot('s', 'pgoutput')":                     "a replication slot",
		"DO $$ BEGIN CREATE ROLE app; EXCEPTION WHEN duplicate_object THEN NULL; END $$": "role app",
		"DO $$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'a') THEN CREATE ROLE a; END IF; END$$":              "role a",
		"CREATE FUNCTION mk(n text) RETURNS void LANGUAGE plpgsql AS $f$ BEGIN EXECUTE format('CREATE ROLE %I', n); END $f$": "role %",
		"CREATE FUNCTION mk() RETURNS void LANGUAGE plpgsql AS 'BEGIN CREATE EXTENSION citext; END'":                         "extension citext",
		"-- make the reader\nCREATE /* the */ ROLE reader":                                                                   "role reader",
	}
	for stmt, object := range refused {
		r := refusal(stmt)
		if r == nil {
			t.Errorf("%q was let through", stmt)
			continue
		}
		if !strings.Contains(r.Object, object) || !strings.Contains(r.Error(), "refused") || r.Statement != stmt {
			t.Errorf("%q: refused as %q (%v), want it to name %q", stmt, r.Object, r, object)
		}
	}
	for _, stmt := range []string{
		"CREATE SCHEMA IF NOT EXISTS projection",
		"CREATE TABLE projection.checkpoint (at timestamptz DEFAULT now(), role text, database text)",
		"ALTER TABLE accounts DROP role",
		"ALTER TABLE accounts ADD COLUMN owner_role text",
		"GRANT SELECT ON ledger TO PUBLIC",
		"GRANT SELECT (a, b) ON ledger TO app",
		"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM PUBLIC",
		"ALTER DEFAULT PRIVILEGES FOR ROLE app GRANT SELECT ON TABLES TO PUBLIC",
		"CREATE USER MAPPING FOR app SERVER s",
		"INSERT INTO notes VALUES ('create role app; create database x')",
		"SELECT 'DROP DATABASE x' AS advice",
		"COMMENT ON TABLE ledger IS 'create role is refused'",
		"CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$",
		"CREATE TRIGGER t AFTER INSERT ON ledger FOR EACH ROW EXECUTE FUNCTION f()",
		"CREATE TYPE projection.status AS ENUM ('role', 'database')",
		"SELECT \"create\", role FROM grants",
	} {
		if r := refusal(stmt); r != nil {
			t.Errorf("%q was refused: %v", stmt, r)
		}
	}
}

func TestOnEventTrigger(t *testing.T) {
	for stmt, want := range map[string]bool{
		"CREATE EVENT TRIGGER x ON ddl_command_end EXECUTE FUNCTION f()": true,
		"drop event trigger x":          true,
		"ALTER EVENT TRIGGER x DISABLE": true,
		"CREATE TRIGGER x AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION f()": false,
		"SELECT 'create event trigger'":                                        false,
	} {
		if got := onEventTrigger(stmt); got != want {
			t.Errorf("onEventTrigger(%q) = %t, want %t", stmt, got, want)
		}
	}
}

func TestSetsSearchPath(t *testing.T) {
	for stmt, want := range map[string]bool{
		"SET search_path TO projection, public":                                                          true,
		"set local SEARCH_PATH = projection":                                                             true,
		"SELECT set_config('search_path', 'projection', false)":                                          true,
		"CREATE FUNCTION f() RETURNS timestamptz LANGUAGE sql SET search_path = x AS $$ SELECT now() $$": true,
		"DO $$ BEGIN SET LOCAL search_path = x; END $$":                                                  true,
		"SET search_path = public, idemcheck, pg_catalog":                                                false,
		"SHOW search_path":                      false,
		"RESET search_path":                     false,
		"SELECT current_setting('search_path')": false,
		"SELECT now()":                          false,
	} {
		if got := setsSearchPath(stmt); got != want {
			t.Errorf("setsSearchPath(%q) = %t, want %t", stmt, got, want)
		}
	}
}
