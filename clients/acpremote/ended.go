package acpremote

import (
	"errors"
	"io"
)

// ended is nil for a connection that ended cleanly (end of input), else err.
func ended(err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
