package sqlitebusy

import (
	"database/sql/driver"
	"fmt"
	"reflect"
	"unsafe"

	"modernc.org/libc"
)

// handles reads the SQLite handle (sqlite3*) and the C thread state of a
// connection of modernc.org/sqlite's driver. The driver does not export
// them, so they are read from its unexported struct: this file is the only
// place that knows its layout, and TestHandlesOfTheDriversConn fails if a
// new version of the driver renames or retypes the fields.
func handles(c driver.Conn) (db uintptr, tls *libc.TLS, err error) {
	v := reflect.ValueOf(c)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct || v.Type().String() != "*sqlite.conn" {
		return 0, nil, fmt.Errorf("sqlitebusy: %T is not a connection of modernc.org/sqlite", c)
	}
	s := v.Elem()
	fdb, ftls := s.FieldByName("db"), s.FieldByName("tls")
	if !fdb.IsValid() || fdb.Kind() != reflect.Uintptr {
		return 0, nil, fmt.Errorf("sqlitebusy: modernc.org/sqlite's conn has no field db uintptr (the driver changed)")
	}
	if !ftls.IsValid() || ftls.Type() != reflect.TypeFor[*libc.TLS]() {
		return 0, nil, fmt.Errorf("sqlitebusy: modernc.org/sqlite's conn has no field tls *libc.TLS (the driver changed)")
	}
	db = *(*uintptr)(unsafe.Pointer(fdb.UnsafeAddr()))
	tls = *(**libc.TLS)(unsafe.Pointer(ftls.UnsafeAddr()))
	if db == 0 || tls == nil {
		return 0, nil, fmt.Errorf("sqlitebusy: the connection is closed")
	}
	return db, tls, nil
}
