package compiler

import "errors"

type scratchPlan struct{}

var errTODO = errors.New("not implemented yet")

func checkPass(s *state) (string, error)    { return "", nil }
func layoutPass(s *state) (string, error)   { return "", errTODO }
func selectPass(s *state) (string, error)   { return "", errTODO }
func bufferPass(s *state) (string, error)   { return "", errTODO }
func emitPass(s *state) (string, error)     { return "", errTODO }
func validatePass(s *state) (string, error) { return "", errTODO }
