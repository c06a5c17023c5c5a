package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/mva"
)

func main() {
	for _, f := range os.Args[1:] {
		m, err := model.Load(f)
		if err != nil {
			fmt.Println(err)
			continue
		}
		ok, why := mva.Supports(m)
		fmt.Println(f, ok, why)
		r, err := mva.New().Solve(context.Background(), m, solve.Options{})
		if err != nil {
			fmt.Println(err)
			continue
		}
		j, _ := json.MarshalIndent(r, "", "  ")
		fmt.Println(string(j))
	}
}
