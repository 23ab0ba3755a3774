//go:build !darwin

package chips

import "errors"

// sysctl is only read on macOS.
func sysctl(name string) (string, error) { return "", errors.New("sysctl " + name + ": not macOS") }
