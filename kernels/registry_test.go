package kernels

import (
	"errors"
	"reflect"
	"testing"
)

func TestNoKernelClaimsABackendThatDidNotRegisterIt(t *testing.T) {
	for _, k := range All() {
		if b := k.Backends(); len(b) != 0 {
			t.Errorf("%s: backends %v with none linked", k.Name, b)
		}
	}
}

func TestABackendRegistersWhatItImplements(t *testing.T) {
	defer unregister("test-a")
	defer unregister("test-b")
	if err := Register("test-b", "gemv_q4_0", "rmsnorm_f16"); err != nil {
		t.Fatal(err)
	}
	MustRegister("test-a", "gemv_q4_0")
	MustRegister("test-a", "gemv_q4_0") // twice is harmless
	k, _ := Lookup("gemv_q4_0")
	if got := k.Backends(); !reflect.DeepEqual(got, []string{"test-a", "test-b"}) {
		t.Errorf("Backends() = %v", got)
	}
	if got := Implemented("test-b"); !reflect.DeepEqual(got, []string{"gemv_q4_0", "rmsnorm_f16"}) {
		t.Errorf("Implemented = %v", got)
	}
	if got := Missing("test-a", []string{"gemv_q4_0", "rmsnorm_f16", "rmsnorm_f16"}); !reflect.DeepEqual(got, []string{"rmsnorm_f16"}) {
		t.Errorf("Missing = %v", got)
	}
}

func TestRegisteringAKernelTheCatalogLacksFailsAndRegistersNothing(t *testing.T) {
	defer unregister("test-c")
	err := Register("test-c", "rmsnorm_f16", "gemv_iq2_xs")
	if !errors.Is(err, ErrNoKernel) {
		t.Fatalf("error %v", err)
	}
	if got := Implemented("test-c"); len(got) != 0 {
		t.Errorf("registered %v", got)
	}
	if err := Register("", "rmsnorm_f16"); err == nil {
		t.Error("empty backend name accepted")
	}
}
