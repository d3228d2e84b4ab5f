module github.com/quarrydb/quarry/bench/peers/chromem

go 1.26.8

require github.com/quarrydb/quarry v0.0.0

require github.com/philippgille/chromem-go v0.7.0

replace github.com/quarrydb/quarry => ../../..
