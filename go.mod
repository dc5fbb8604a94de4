module github.com/chokaq/chokaq-go

go 1.26
