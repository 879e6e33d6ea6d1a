package acp

//go:generate go run ../internal/acpgen -schema ../schema/v1/schema.json -out types_gen.go
