//go:build unix && !linux

package xtdbserver

import "syscall"

func setPdeathsig(*syscall.SysProcAttr) {}
