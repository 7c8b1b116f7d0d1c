package rabbitbroker

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
)

// TestDownTellsAGoneBrokerFromARefusal: a frame written on a connection
// the server cut fails with the socket's error, not amqp.ErrClosed (seen
// when RabbitMQ stops mid-campaign); it must read as the broker gone, and
// a refusal by a server that is up must not.
func TestDownTellsAGoneBrokerFromARefusal(t *testing.T) {
	reset := &net.OpError{Op: "write", Net: "tcp", Err: syscall.ECONNRESET}
	for _, tc := range []struct {
		err  error
		gone bool
	}{
		{reset, true},
		{&net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}, true},
		{io.EOF, true},
		{amqp.ErrClosed, true},
		{&amqp.Error{Code: amqp.ConnectionForced, Reason: "shutdown"}, true},
		{&amqp.Error{Code: amqp.PreconditionFailed, Reason: "inequivalent arg"}, false},
		{errors.New("policy refused"), false},
	} {
		if got := errors.Is(down("channel", tc.err), broker.ErrBrokerDown); got != tc.gone {
			t.Errorf("down(%v): broker gone = %t, want %t", tc.err, got, tc.gone)
		}
	}
}
