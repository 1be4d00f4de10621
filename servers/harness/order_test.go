package harness

import (
	"slices"
	"testing"
)

func TestAnswered(t *testing.T) {
	batch := `{"protocol":"agentpm-harness-machine","version":1,"kind":"response","id":"1","payload":{"id":"x"}}
{"protocol":"agentpm-harness-machine","version":1,"kind":"event","method":"harness_event","id":"ev-1","payload":{}}
{"protocol":"agentpm-harness-machine","version":1,"kind":"error","id":"a\"b\\","payload":null,"error":{"code":"run_active","message":"m"}}
{"protocol":"agentpm-harness-machine","version":1,"kind":"request","id":"host-1","method":"host_service","payload":{}}
{"protocol":"agentpm-harness-machine","version":1,"kind":"response","id":"unterminated
{"protocol":"agentpm-harness-machine","version":1,"kind":"response","id":"2","payload":null}`
	var ids []string
	answered([]byte(batch), func(id string) { ids = append(ids, id) })
	if want := []string{`"1"`, `"a\"b\\"`, `"2"`}; !slices.Equal(ids, want) {
		t.Fatalf("answers %q, want %q", ids, want)
	}
}
