package acp

//go:generate go run ../internal/acpgen -schema ../schema/v1/schema.json -out types_gen.go
//go:generate go run ../internal/acpgen -schema ../schema/v2/schema.json -shared ../schema/v1/schema.json -types all -prefix V2 -out types_v2_gen.go
