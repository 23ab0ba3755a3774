package server

import (
	"reflect"
	"testing"
)

func TestSchedule(t *testing.T) {
	p := func(v ...int32) []int32 { return v }
	for _, tc := range []struct {
		name    string
		waiting [][]int32
		slots   []slotState
		want    []assignment
	}{
		{"fresh slots, first come first served", [][]int32{p(1, 2, 3), p(4, 5)}, []slotState{{}, {}, {}},
			[]assignment{{0, 0, 0, 0}, {1, 1, 1, 0}}},
		{"a conversation's next turn goes back to its slot", [][]int32{p(1, 2, 3, 4, 5)}, []slotState{{hist: p(9, 9)}, {hist: p(1, 2, 3)}},
			[]assignment{{0, 1, 1, 3}}},
		{"a busy slot's prefix is copied into a free one", [][]int32{p(1, 2, 3, 4)}, []slotState{{busy: true, hist: p(1, 2, 3, 9)}, {hist: p(7)}},
			[]assignment{{0, 1, 0, 3}}},
		{"no free slot: everyone waits", [][]int32{p(1)}, []slotState{{busy: true}},
			nil},
		{"more jobs than slots: the first ones go", [][]int32{p(1), p(2), p(3)}, []slotState{{}, {busy: true}, {}},
			[]assignment{{0, 0, 0, 0}, {1, 2, 2, 0}}},
		{"at least one token is fed", [][]int32{p(1, 2)}, []slotState{{hist: p(1, 2, 3)}},
			[]assignment{{0, 0, 0, 1}}},
		{"an unrelated job takes an empty slot, not a conversation's", [][]int32{p(1, 2, 8, 8)}, []slotState{{hist: p(1, 2, 3, 4, 5, 6)}, {}},
			[]assignment{{0, 1, 0, 2}}},
		{"among slots of other conversations, the one that loses least", [][]int32{p(1, 8)}, []slotState{{hist: p(2, 2, 2, 2)}, {hist: p(1, 3)}},
			[]assignment{{0, 1, 1, 1}}},
		{"a slot taken this step is not copied from", [][]int32{p(5, 6, 7), p(1, 2, 3)}, []slotState{{hist: p(1, 2, 3, 4)}, {}},
			[]assignment{{0, 1, 1, 0}, {1, 0, 0, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := schedule(tc.waiting, tc.slots); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
