//go:build !amd64

package membw

const haveVector = false

func sumVector(p []uint64) uint64 { return sumGo(p) }
