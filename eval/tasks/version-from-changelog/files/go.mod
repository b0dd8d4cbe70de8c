module example.com/release

go 1.21
