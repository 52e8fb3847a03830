module local/k8slocaltools

go 1.24.0
