package provisioner

import "time"

// ClockFunc adapts a function to Clock.
type ClockFunc func() time.Time

// Now is f().
func (f ClockFunc) Now() time.Time { return f() }
