module @jit_outer_loop attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4x4xf32> {mhlo.sharding = "{replicated}"}) -> (tensor<4x4x4xf32> {jax.result_info = ""}) {
    %0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<3x4x4x4xf32>
    %2 = stablehlo.constant dense<0> : tensor<i32>
    %3:3 = stablehlo.while(%iterArg = %2, %iterArg_0 = %arg0, %iterArg_1 = %1) : tensor<i32>, tensor<4x4x4xf32>, tensor<3x4x4x4xf32>
     cond {
      %76 = stablehlo.constant dense<3> : tensor<i32>
      %77 = stablehlo.compare  LT, %iterArg, %76,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %77 : tensor<i1>
    } do {
      %76 = stablehlo.multiply %iterArg_0, %iterArg_0 : tensor<4x4x4xf32>
      %77 = stablehlo.cosine %76 : tensor<4x4x4xf32>
      %78 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %79 = stablehlo.broadcast_in_dim %78, dims = [] : (tensor<f32>) -> tensor<4x4x4xf32>
      %80 = stablehlo.add %79, %77 : tensor<4x4x4xf32>
      %81 = stablehlo.broadcast_in_dim %80, dims = [1, 2, 3] : (tensor<4x4x4xf32>) -> tensor<1x4x4x4xf32>
      %82 = stablehlo.constant dense<0> : tensor<i32>
      %83 = stablehlo.compare  LT, %iterArg, %82,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %84 = stablehlo.convert %iterArg : tensor<i32>
      %85 = stablehlo.constant dense<3> : tensor<i32>
      %86 = stablehlo.add %84, %85 : tensor<i32>
      %87 = stablehlo.select %83, %86, %iterArg : tensor<i1>, tensor<i32>
      %88 = stablehlo.constant dense<0> : tensor<i32>
      %89 = stablehlo.constant dense<0> : tensor<i32>
      %90 = stablehlo.constant dense<0> : tensor<i32>
      %91 = stablehlo.dynamic_update_slice %iterArg_1, %81, %87, %88, %89, %90 : (tensor<3x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<3x4x4x4xf32>
      %92 = stablehlo.constant dense<1> : tensor<i32>
      %93 = stablehlo.add %iterArg, %92 : tensor<i32>
      stablehlo.return %93, %80, %91 : tensor<i32>, tensor<4x4x4xf32>, tensor<3x4x4x4xf32>
    }
    %4 = stablehlo.constant dense<-1> : tensor<i32>
    %5 = stablehlo.constant dense<0> : tensor<i32>
    %6 = stablehlo.compare  LT, %4, %5,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %7 = stablehlo.constant dense<-1> : tensor<i32>
    %8 = stablehlo.constant dense<3> : tensor<i32>
    %9 = stablehlo.add %7, %8 : tensor<i32>
    %10 = stablehlo.constant dense<-1> : tensor<i32>
    %11 = stablehlo.select %6, %9, %10 : tensor<i1>, tensor<i32>
    %12 = stablehlo.constant dense<0> : tensor<i32>
    %13 = stablehlo.constant dense<0> : tensor<i32>
    %14 = stablehlo.compare  LT, %12, %13,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %15 = stablehlo.constant dense<0> : tensor<i32>
    %16 = stablehlo.constant dense<4> : tensor<i32>
    %17 = stablehlo.add %15, %16 : tensor<i32>
    %18 = stablehlo.constant dense<0> : tensor<i32>
    %19 = stablehlo.select %14, %17, %18 : tensor<i1>, tensor<i32>
    %20 = stablehlo.constant dense<0> : tensor<i32>
    %21 = stablehlo.constant dense<0> : tensor<i32>
    %22 = stablehlo.compare  LT, %20, %21,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %23 = stablehlo.constant dense<0> : tensor<i32>
    %24 = stablehlo.constant dense<4> : tensor<i32>
    %25 = stablehlo.add %23, %24 : tensor<i32>
    %26 = stablehlo.constant dense<0> : tensor<i32>
    %27 = stablehlo.select %22, %25, %26 : tensor<i1>, tensor<i32>
    %28 = stablehlo.constant dense<0> : tensor<i32>
    %29 = stablehlo.constant dense<0> : tensor<i32>
    %30 = stablehlo.compare  LT, %28, %29,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %31 = stablehlo.constant dense<0> : tensor<i32>
    %32 = stablehlo.constant dense<4> : tensor<i32>
    %33 = stablehlo.add %31, %32 : tensor<i32>
    %34 = stablehlo.constant dense<0> : tensor<i32>
    %35 = stablehlo.select %30, %33, %34 : tensor<i1>, tensor<i32>
    %36 = stablehlo.dynamic_slice %3#2, %11, %19, %27, %35, sizes = [1, 4, 4, 4] : (tensor<3x4x4x4xf32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x4x4x4xf32>
    %37 = stablehlo.reshape %36 : (tensor<1x4x4x4xf32>) -> tensor<4x4x4xf32>
    %38 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %39 = stablehlo.broadcast_in_dim %38, dims = [] : (tensor<f32>) -> tensor<3x4x4x4xf32>
    %40 = stablehlo.constant dense<0> : tensor<i32>
    %41:3 = stablehlo.while(%iterArg = %40, %iterArg_0 = %37, %iterArg_1 = %39) : tensor<i32>, tensor<4x4x4xf32>, tensor<3x4x4x4xf32>
     cond {
      %76 = stablehlo.constant dense<3> : tensor<i32>
      %77 = stablehlo.compare  LT, %iterArg, %76,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %77 : tensor<i1>
    } do {
      %76 = stablehlo.multiply %iterArg_0, %iterArg_0 : tensor<4x4x4xf32>
      %77 = stablehlo.cosine %76 : tensor<4x4x4xf32>
      %78 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %79 = stablehlo.broadcast_in_dim %78, dims = [] : (tensor<f32>) -> tensor<4x4x4xf32>
      %80 = stablehlo.add %79, %77 : tensor<4x4x4xf32>
      %81 = stablehlo.broadcast_in_dim %80, dims = [1, 2, 3] : (tensor<4x4x4xf32>) -> tensor<1x4x4x4xf32>
      %82 = stablehlo.constant dense<0> : tensor<i32>
      %83 = stablehlo.compare  LT, %iterArg, %82,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %84 = stablehlo.convert %iterArg : tensor<i32>
      %85 = stablehlo.constant dense<3> : tensor<i32>
      %86 = stablehlo.add %84, %85 : tensor<i32>
      %87 = stablehlo.select %83, %86, %iterArg : tensor<i1>, tensor<i32>
      %88 = stablehlo.constant dense<0> : tensor<i32>
      %89 = stablehlo.constant dense<0> : tensor<i32>
      %90 = stablehlo.constant dense<0> : tensor<i32>
      %91 = stablehlo.dynamic_update_slice %iterArg_1, %81, %87, %88, %89, %90 : (tensor<3x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<3x4x4x4xf32>
      %92 = stablehlo.constant dense<1> : tensor<i32>
      %93 = stablehlo.add %iterArg, %92 : tensor<i32>
      stablehlo.return %93, %80, %91 : tensor<i32>, tensor<4x4x4xf32>, tensor<3x4x4x4xf32>
    }
    %42 = stablehlo.constant dense<-1> : tensor<i32>
    %43 = stablehlo.constant dense<0> : tensor<i32>
    %44 = stablehlo.compare  LT, %42, %43,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %45 = stablehlo.constant dense<-1> : tensor<i32>
    %46 = stablehlo.constant dense<3> : tensor<i32>
    %47 = stablehlo.add %45, %46 : tensor<i32>
    %48 = stablehlo.constant dense<-1> : tensor<i32>
    %49 = stablehlo.select %44, %47, %48 : tensor<i1>, tensor<i32>
    %50 = stablehlo.constant dense<0> : tensor<i32>
    %51 = stablehlo.constant dense<0> : tensor<i32>
    %52 = stablehlo.compare  LT, %50, %51,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %53 = stablehlo.constant dense<0> : tensor<i32>
    %54 = stablehlo.constant dense<4> : tensor<i32>
    %55 = stablehlo.add %53, %54 : tensor<i32>
    %56 = stablehlo.constant dense<0> : tensor<i32>
    %57 = stablehlo.select %52, %55, %56 : tensor<i1>, tensor<i32>
    %58 = stablehlo.constant dense<0> : tensor<i32>
    %59 = stablehlo.constant dense<0> : tensor<i32>
    %60 = stablehlo.compare  LT, %58, %59,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %61 = stablehlo.constant dense<0> : tensor<i32>
    %62 = stablehlo.constant dense<4> : tensor<i32>
    %63 = stablehlo.add %61, %62 : tensor<i32>
    %64 = stablehlo.constant dense<0> : tensor<i32>
    %65 = stablehlo.select %60, %63, %64 : tensor<i1>, tensor<i32>
    %66 = stablehlo.constant dense<0> : tensor<i32>
    %67 = stablehlo.constant dense<0> : tensor<i32>
    %68 = stablehlo.compare  LT, %66, %67,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %69 = stablehlo.constant dense<0> : tensor<i32>
    %70 = stablehlo.constant dense<4> : tensor<i32>
    %71 = stablehlo.add %69, %70 : tensor<i32>
    %72 = stablehlo.constant dense<0> : tensor<i32>
    %73 = stablehlo.select %68, %71, %72 : tensor<i1>, tensor<i32>
    %74 = stablehlo.dynamic_slice %41#2, %49, %57, %65, %73, sizes = [1, 4, 4, 4] : (tensor<3x4x4x4xf32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x4x4x4xf32>
    %75 = stablehlo.reshape %74 : (tensor<1x4x4x4xf32>) -> tensor<4x4x4xf32>
    return %75 : tensor<4x4x4xf32>
  }
}
