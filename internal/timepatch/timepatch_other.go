//go:build !(linux && amd64)

package timepatch

import "time"

func patch(func() time.Time) (func(), error) { return nil, ErrUnsupported }
