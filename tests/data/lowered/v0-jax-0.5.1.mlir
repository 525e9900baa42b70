module @jit_outer_loop attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4x4xf32>) -> (tensor<4x4x4xf32> {jax.result_info = ""}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x4x4x4xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1:3 = stablehlo.while(%iterArg = %c, %iterArg_8 = %arg0, %iterArg_9 = %0) : tensor<i32>, tensor<4x4x4xf32>, tensor<3x4x4x4xf32>
     cond {
      %c_10 = stablehlo.constant dense<3> : tensor<i32>
      %32 = stablehlo.compare  LT, %iterArg, %c_10,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %32 : tensor<i1>
    } do {
      %32:2 = func.call @None(%iterArg_8) : (tensor<4x4x4xf32>) -> (tensor<4x4x4xf32>, tensor<4x4x4xf32>)
      %33 = stablehlo.broadcast_in_dim %32#1, dims = [1, 2, 3] : (tensor<4x4x4xf32>) -> tensor<1x4x4x4xf32>
      %c_10 = stablehlo.constant dense<0> : tensor<i32>
      %34 = stablehlo.compare  LT, %iterArg, %c_10,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %35 = stablehlo.convert %iterArg : tensor<i32>
      %c_11 = stablehlo.constant dense<3> : tensor<i32>
      %36 = stablehlo.add %35, %c_11 : tensor<i32>
      %37 = stablehlo.select %34, %36, %iterArg : tensor<i1>, tensor<i32>
      %c_12 = stablehlo.constant dense<0> : tensor<i32>
      %38 = stablehlo.dynamic_update_slice %iterArg_9, %33, %37, %c_12, %c_12, %c_12 : (tensor<3x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<3x4x4x4xf32>
      %c_13 = stablehlo.constant dense<1> : tensor<i32>
      %39 = stablehlo.add %iterArg, %c_13 : tensor<i32>
      stablehlo.return %39, %32#0, %38 : tensor<i32>, tensor<4x4x4xf32>, tensor<3x4x4x4xf32>
    }
    %c_0 = stablehlo.constant dense<-1> : tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %2 = stablehlo.compare  LT, %c_0, %c_1,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_2 = stablehlo.constant dense<-1> : tensor<i32>
    %c_3 = stablehlo.constant dense<3> : tensor<i32>
    %3 = stablehlo.add %c_2, %c_3 : tensor<i32>
    %4 = stablehlo.select %2, %3, %c_0 : tensor<i1>, tensor<i32>
    %5 = stablehlo.compare  LT, %c_1, %c_1,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_4 = stablehlo.constant dense<0> : tensor<i32>
    %c_5 = stablehlo.constant dense<4> : tensor<i32>
    %6 = stablehlo.add %c_4, %c_5 : tensor<i32>
    %7 = stablehlo.select %5, %6, %c_1 : tensor<i1>, tensor<i32>
    %8 = stablehlo.compare  LT, %c_1, %c_1,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %9 = stablehlo.add %c_4, %c_5 : tensor<i32>
    %10 = stablehlo.select %8, %9, %c_1 : tensor<i1>, tensor<i32>
    %11 = stablehlo.compare  LT, %c_1, %c_1,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %12 = stablehlo.add %c_4, %c_5 : tensor<i32>
    %13 = stablehlo.select %11, %12, %c_1 : tensor<i1>, tensor<i32>
    %14 = stablehlo.dynamic_slice %1#2, %4, %7, %10, %13, sizes = [1, 4, 4, 4] : (tensor<3x4x4x4xf32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x4x4x4xf32>
    %15 = stablehlo.reshape %14 : (tensor<1x4x4x4xf32>) -> tensor<4x4x4xf32>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %16 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<3x4x4x4xf32>
    %c_7 = stablehlo.constant dense<0> : tensor<i32>
    %17:3 = stablehlo.while(%iterArg = %c_7, %iterArg_8 = %15, %iterArg_9 = %16) : tensor<i32>, tensor<4x4x4xf32>, tensor<3x4x4x4xf32>
     cond {
      %c_10 = stablehlo.constant dense<3> : tensor<i32>
      %32 = stablehlo.compare  LT, %iterArg, %c_10,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %32 : tensor<i1>
    } do {
      %32:2 = func.call @None_0(%iterArg_8) : (tensor<4x4x4xf32>) -> (tensor<4x4x4xf32>, tensor<4x4x4xf32>)
      %33 = stablehlo.broadcast_in_dim %32#1, dims = [1, 2, 3] : (tensor<4x4x4xf32>) -> tensor<1x4x4x4xf32>
      %c_10 = stablehlo.constant dense<0> : tensor<i32>
      %34 = stablehlo.compare  LT, %iterArg, %c_10,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %35 = stablehlo.convert %iterArg : tensor<i32>
      %c_11 = stablehlo.constant dense<3> : tensor<i32>
      %36 = stablehlo.add %35, %c_11 : tensor<i32>
      %37 = stablehlo.select %34, %36, %iterArg : tensor<i1>, tensor<i32>
      %c_12 = stablehlo.constant dense<0> : tensor<i32>
      %38 = stablehlo.dynamic_update_slice %iterArg_9, %33, %37, %c_12, %c_12, %c_12 : (tensor<3x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<3x4x4x4xf32>
      %c_13 = stablehlo.constant dense<1> : tensor<i32>
      %39 = stablehlo.add %iterArg, %c_13 : tensor<i32>
      stablehlo.return %39, %32#0, %38 : tensor<i32>, tensor<4x4x4xf32>, tensor<3x4x4x4xf32>
    }
    %18 = stablehlo.compare  LT, %c_0, %c_1,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %19 = stablehlo.add %c_2, %c_3 : tensor<i32>
    %20 = stablehlo.select %18, %19, %c_0 : tensor<i1>, tensor<i32>
    %21 = stablehlo.compare  LT, %c_1, %c_1,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %22 = stablehlo.add %c_4, %c_5 : tensor<i32>
    %23 = stablehlo.select %21, %22, %c_1 : tensor<i1>, tensor<i32>
    %24 = stablehlo.compare  LT, %c_1, %c_1,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %25 = stablehlo.add %c_4, %c_5 : tensor<i32>
    %26 = stablehlo.select %24, %25, %c_1 : tensor<i1>, tensor<i32>
    %27 = stablehlo.compare  LT, %c_1, %c_1,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %28 = stablehlo.add %c_4, %c_5 : tensor<i32>
    %29 = stablehlo.select %27, %28, %c_1 : tensor<i1>, tensor<i32>
    %30 = stablehlo.dynamic_slice %17#2, %20, %23, %26, %29, sizes = [1, 4, 4, 4] : (tensor<3x4x4x4xf32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x4x4x4xf32>
    %31 = stablehlo.reshape %30 : (tensor<1x4x4x4xf32>) -> tensor<4x4x4xf32>
    return %31 : tensor<4x4x4xf32>
  }
  func.func private @None(%arg0: tensor<4x4x4xf32>) -> (tensor<4x4x4xf32>, tensor<4x4x4xf32>) {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<4x4x4xf32>
    %1 = stablehlo.cosine %0 : tensor<4x4x4xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4x4xf32>
    %3 = stablehlo.add %2, %1 : tensor<4x4x4xf32>
    return %3, %3 : tensor<4x4x4xf32>, tensor<4x4x4xf32>
  }
  func.func private @None_0(%arg0: tensor<4x4x4xf32>) -> (tensor<4x4x4xf32>, tensor<4x4x4xf32>) {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<4x4x4xf32>
    %1 = stablehlo.cosine %0 : tensor<4x4x4xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4x4xf32>
    %3 = stablehlo.add %2, %1 : tensor<4x4x4xf32>
    return %3, %3 : tensor<4x4x4xf32>, tensor<4x4x4xf32>
  }
}
