//go:build !linux

package realagent

import (
	"errors"
	"net"
)

type netns struct{ ino uint64 }

var errNoNetns = errors.New("realagent: network namespaces need Linux")

func newNetns(...int) (*netns, []net.Listener, error) { return nil, nil, errNoNetns }
func (n *netns) path() string                         { return "" }
func (n *netns) close() error                         { return nil }
func procsIn(uint64) []Proc                           { return nil }
func killAll(uint64)                                  {}
func procsInGroup(int) []Proc                         { return nil }
