package kernels

import "time"

//go:noescape
func zzQ80T2(w *byte, xq *int8, xd *float32, xs *int32, nb int) float32

//go:noescape
func zzQ80Far(w *byte, xq *int8, xd *float32, xs *int32, nb int) float32

//go:noescape
func zzQ80None(w *byte, xq *int8, xd *float32, xs *int32, nb int) float32

func nowNano() int64 { return time.Now().UnixNano() }
